// SPDX-License-Identifier: Apache-2.0
// A systemd node for the e2e tests (test/e2e/systemd-node/node.sh): systemd
// as PID 1 of its own namespaces on a Debian 12 tree of its own, its cgroup
// root a fresh directory of this host's cgroup2 hierarchy, D-Bus, and
// Debian's containerd 1.6 with runc 1.1.5 on the systemd cgroup driver. This
// build is installed into it as the package lays it out (/usr/bin/specshim,
// /usr/libexec/specshim, /etc/specshim/config.toml), and the packaged
// install-on-host.sh registers the specshim handler on the node's
// SystemdCgroup config and restarts containerd through systemctl, as on a
// node. The tests reach containerd's CRI socket through /proc/<pid>/root.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "container.h"
#include "cri_client.h"
#include "tempdir.h"

namespace specshim::e2e {

class SystemdNode {
 public:
  // Boots the node and returns once CRI answers, the handler is installed
  // and the busybox image is imported. Throws with the boot's console tail.
  SystemdNode();
  ~SystemdNode();
  SystemdNode(const SystemdNode&) = delete;
  SystemdNode& operator=(const SystemdNode&) = delete;

  // share: a directory of this host, /specshim-test in the node.
  const std::filesystem::path& share() const { return share_.path(); }
  static constexpr const char* kShare = "/specshim-test";
  // in_node: a path of the node, as this host reaches it.
  std::filesystem::path in_node(const std::filesystem::path& node_path) const;
  CriClient& cri() { return *cri_; }

  // exec runs argv inside the node (its namespaces and root, its PATH).
  test::ProcessResult exec(const std::vector<std::string>& argv, int timeout_ms = 60000) const;
  // exec_ok: exec, throwing with the output when argv fails.
  std::string exec_ok(const std::vector<std::string>& argv, int timeout_ms = 60000) const;
  // daemon_reload: `systemctl daemon-reload`, which rebuilds every unit's
  // cgroup settings (its device program among them) from its properties.
  void daemon_reload() const;
  // device_allow: `systemctl show -p DeviceAllow --value UNIT`.
  std::string device_allow(const std::string& unit) const;
  // write_config writes the node's /etc/specshim/config.toml.
  void write_config(const std::string& text) const;
  // pod_config: a kubelet-like sandbox on the systemd driver: its cgroup
  // parent a slice (`specshim_e2e-pod<uid>.slice`), log dir under share().
  cri::PodSandboxConfig pod_config(const std::string& name) const;
  // installed: what install-on-host.sh printed.
  const std::string& installed() const { return installed_; }
  // diagnostics: the journal's tail for containerd and the console's.
  std::string diagnostics() const;

 private:
  void stop() noexcept;
  test::TempDir dir_;    // the overlay's upper and work dirs, pid, console
  test::TempDir share_;  // /specshim-test
  std::unique_ptr<CriClient> cri_;
  pid_t pid_ = -1;
  std::string installed_;
};

// unit_of: the systemd unit runc's systemd driver makes for a CRI container
// of containerd's (cri-containerd-<id>.scope).
std::string unit_of(const std::string& container_id);

}  // namespace specshim::e2e
