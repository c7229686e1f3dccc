// SPDX-License-Identifier: Apache-2.0
// A private Debian containerd per test, configured the way a node running
// specshim is: the shipped handler snippet (containerd-config/containerd-1.x.toml)
// appended to the config exactly as install-on-host.sh does on a containerd
// 1.x node, with BinaryName pointed at the built specshim.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "container.h"
#include "cri_client.h"
#include "tempdir.h"

namespace specshim::e2e {

inline constexpr const char* kImage = "localhost/specshim-e2e/busybox:1";
inline constexpr const char* kHandler = "specshim";           // the RuntimeClass handler
inline constexpr const char* kCtrNamespace = "specshim-e2e";  // ctr's containerd namespace

// poll_until calls done() until it returns true or `deadline` has passed;
// returns done()'s last answer. The only way these tests wait for anything.
bool poll_until(const std::function<bool()>& done, std::chrono::milliseconds deadline,
                std::chrono::milliseconds step = std::chrono::milliseconds(20));

// Containerd owns everything of one containerd instance under dir():
// root/, state/, containerd.sock, config.toml, containerd.log, and for
// specshim: specshim.toml (its SPECSHIM_CONFIG), specshim.log (its debug
// log), runtime-calls.log (argv of every runc call specshim made, through a
// recording wrapper set as specshim's [runtime] path). No CNI: host-network
// pods only. restrict_oom_score_adj: this VM lacks CAP_SYS_RESOURCE.
//
// The constructor returns once CRI answers and the busybox image is imported
// into the ctr namespace and k8s.io and known to CRI. The destructor tears
// down even after a failed test: pods, ctr tasks, containerd, then any shim,
// container process, runc state, mount and cgroup left behind. A test process
// killed before its teardown (ctest timeout) leaves its dir marked with its
// pid (e2e-owner); the next harness cleans that up.
class Containerd {
 public:
  Containerd();
  ~Containerd();
  Containerd(const Containerd&) = delete;
  Containerd& operator=(const Containerd&) = delete;

  const std::filesystem::path& dir() const { return tmp_.path(); }
  std::string socket() const { return (dir() / "containerd.sock").string(); }
  CriClient& cri() { return *cri_; }

  // set_specshim_config writes specshim's config: the harness's [runtime] and
  // [log] tables followed by extra_toml. specshim rereads it on every create.
  void set_specshim_config(const std::string& extra_toml = "");
  // set_specshim_config_file writes specshim's config as exactly `text`
  // (no [runtime] or [log] of the harness: runc from PATH, no debug log).
  void set_specshim_config_file(const std::string& text);
  // ctr runs `ctr --address <socket> <args...>`.
  test::ProcessResult ctr(const std::vector<std::string>& args, int timeout_ms = 60000) const;
  // runtime_calls: the argv (without argv[0], space-joined) of every runtime
  // call specshim made, in order.
  std::vector<std::string> runtime_calls() const;
  std::string specshim_log() const;
  // shim_pids: the containerd-shim-runc-v2 processes serving this containerd.
  std::vector<pid_t> shim_pids() const;
  // diagnostics: tails of containerd's and specshim's logs, for failure messages.
  std::string diagnostics() const;

  // pod_config is a kubelet-like sandbox config: host network, log directory
  // and a cgroup parent owned by this harness.
  cri::PodSandboxConfig pod_config(const std::string& name) const;

 private:
  void write_containerd_config() const;
  void start();
  void import_image();
  bool alive();
  void teardown() noexcept;
  void remove_pods() noexcept;
  void remove_ctr_tasks() noexcept;
  void stop_containerd() noexcept;

  test::TempDir tmp_;
  std::string cgroup_root_;  // first cgroup path element of every pod, unique to this harness
  pid_t pid_ = -1;
  std::unique_ptr<CriClient> cri_;
};

}  // namespace specshim::e2e
