// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the e2e tests: runtime-call filtering, CRI log files,
// kubelet-like container configs, and specshim's own error text.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "containerd_harness.h"

// The tags of the cases that exercise the passwd and cdi modifiers.
#define PASSWD_TAGS "[passwd]"
#define CDI_TAGS "[cdi]"

namespace specshim::e2e {

// calls_for keeps the runtime calls that name container `id` as an argument.
std::vector<std::string> calls_for(const std::vector<std::string>& calls, const std::string& id);
// in_order: `expected` appears in `calls` as a subsequence.
bool in_order(const std::vector<std::string>& calls, const std::vector<std::string>& expected);
std::string join(const std::vector<std::string>& lines);

// specshim_config_error is the message specshim reports for the current
// config (`specshim doctor` describes a config error with the same text a
// create writes to --log), prefixed "specshim: " as in --log.
std::string specshim_config_error(const Containerd& c);

// A CRI container log line: "<time> <stream> <P|F> <text>"; P(artial) lines are joined.
struct LogLine {
  std::string stream;  // stdout or stderr
  std::string text;
};
std::vector<LogLine> read_cri_log(const std::string& path);
// log_text is the log's lines, "<stream>: <text>\n" each, for matching and messages.
std::string log_text(const std::vector<LogLine>& lines);

// container_config is a kubelet-like container: busybox image, `sh -c script`,
// its own pid namespace, log file <name>.log in the pod's log directory.
cri::ContainerConfig container_config(const std::string& name, const std::string& script);

// wait_exited polls ContainerStatus until the container has exited.
cri::ContainerStatus wait_exited(CriClient& cri, const std::string& id,
                                 std::chrono::milliseconds deadline = std::chrono::seconds(30));

// bundle_config reads config.json of a running task in containerd's k8s.io namespace.
std::string bundle_config(const Containerd& c, const std::string& id);

// Pod is one sandbox run as the kubelet runs it (on `handler`; "" is
// containerd's default), removed at scope exit.
struct Pod {
  Pod(Containerd& c, const std::string& name, const std::map<std::string, std::string>& annotations = {},
      const std::string& handler = kHandler);
  // A pod from a sandbox config of the test's own (c.pod_config() changed).
  Pod(Containerd& c, cri::PodSandboxConfig config, const std::string& handler = kHandler);
  ~Pod();
  Pod(const Pod&) = delete;
  Pod& operator=(const Pod&) = delete;

  std::string create(const cri::ContainerConfig& cfg) { return c.cri().create_container(id, cfg, config); }
  std::string log_path(const cri::ContainerConfig& cfg) const { return config.log_directory() + "/" + cfg.log_path(); }

  // Exited is a container run to completion: its id, final status and CRI log.
  struct Exited {
    std::string id;
    cri::ContainerStatus status;
    std::vector<LogLine> log;
  };
  // run creates and starts a container and waits for it to exit.
  Exited run(const cri::ContainerConfig& cfg);

  Containerd& c;
  cri::PodSandboxConfig config;
  std::string id;
};

// cdi_fixture writes the CDI fixture into c.cdi_dir() and returns the [cdi]
// table that points specshim there: example.com/accel=0, a char node with
// /dev/full's numbers as its host node, env, a read-only mount and a
// poststop hook (/bin/true, on the host).
std::string cdi_fixture(const Containerd& c);
// kFixtureDevice is the fixture's one device, as a request names it.
inline constexpr const char* kFixtureDevice = "example.com/accel=0";

// gpu_fixture makes two stand-in GPUs (char nodes with /dev/full's numbers
// under dir()/gpu-dev) and an nvidia.com/gpu CDI spec in c.cdi_dir() naming
// each by index and by UUID (/dev/nvidia0, /dev/nvidia1). Returns the UUIDs.
std::vector<std::string> gpu_fixture(const Containerd& c);

// spawn_specshim_nri starts the built specshim-nri against c's NRI socket
// with c's specshim.toml, its stderr appended to c.dir()/specshim-nri.log,
// and returns its pid (the caller ends it). Throws when it cannot start.
pid_t spawn_specshim_nri(const Containerd& c);

// occurrences counts the places `what` starts in text.
int occurrences(const std::string& text, const std::string& what);

// CdiEdits counts the fixture device's edits in a final config.json: its
// node, env, allow rule, mount and poststop hook.
struct CdiEdits {
  int nodes, env, rules, mounts, hooks;
  bool operator==(const CdiEdits&) const = default;
};
std::ostream& operator<<(std::ostream& os, const CdiEdits& e);
CdiEdits cdi_fixture_edits(const nlohmann::json& spec);

// FakeKubelet runs specshim-fake-kubelet (test/fakes/fake_kubelet_main.cpp)
// with `config` (its JSON) until destroyed: PodResources, device plugins and
// the device manager's checkpoint under config["kubelet_root"], as a process,
// so no second gRPC is linked into the e2e binaries.
class FakeKubelet {
 public:
  explicit FakeKubelet(const std::string& config_json, const std::filesystem::path& dir);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

 private:
  pid_t pid_ = -1;
};

}  // namespace specshim::e2e
