// SPDX-License-Identifier: Apache-2.0
// A dev box for the e2e tests (test/e2e/devbox/devbox.sh): a privileged
// container created by this build's specshim over the host's runc, given 2
// of 4 stand-in GPUs through CDI (its /dev and its device cgroup hold only
// those and the defaults), running Debian sid's dockerd 28.5.2 (from
// scripts/fetch-docker.sh) with this build's /usr/bin/specshim as its
// default runtime and the shipped dev box files (packaging/examples/dind/:
// config.toml, daemon.json), the node's CDI spec at /var/run/cdi. The
// busybox image (docker.io/library/busybox:latest, no entrypoint) is loaded.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "container.h"
#include "tempdir.h"

namespace specshim::e2e {

class DevBox {
 public:
  // Starts the dev box and returns once dockerd answers and the image is
  // loaded. Throws with devbox.sh's output and the console's tail.
  DevBox();
  ~DevBox();
  DevBox(const DevBox&) = delete;
  DevBox& operator=(const DevBox&) = delete;

  // docker runs the dev box's docker client with args (its exit status and
  // output; dockerd's warnings are on err).
  test::ProcessResult docker(const std::vector<std::string>& args, int timeout_ms = 60000) const;
  // exec runs argv inside the dev box (its namespaces and root, dockerd's PATH).
  test::ProcessResult exec(const std::vector<std::string>& argv, int timeout_ms = 60000) const;
  // exec_ok: exec, throwing with the output when argv fails.
  std::string exec_ok(const std::vector<std::string>& argv, int timeout_ms = 60000) const;
  // in_box: a path of the dev box, as this host reaches it.
  std::filesystem::path in_box(const std::filesystem::path& box_path) const;
  // diagnostics: the console's tail (dockerd's log) and the outer runtime's.
  std::string diagnostics() const;
  // stop: devbox.sh stop (the destructor's; idempotent).
  void stop() noexcept;

 private:
  test::TempDir dir_;
  pid_t pid_ = -1;
};

}  // namespace specshim::e2e
