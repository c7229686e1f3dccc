// SPDX-License-Identifier: Apache-2.0
// A private Debian containerd per test, of the tier the test binary was built
// for (1.6, the system's; 1.7 from trixie; 2.x from sid: see
// scripts/fetch-containerd.sh), configured the way a node running specshim
// is: on 1.x the shipped containerd-config/containerd-1.x.toml appended to the
// config (config version 2) as install-on-host.sh does, on 2.x
// containerd-2.x.toml loaded through `imports` (version 3), each with its
// BinaryName pointed at the built specshim and nothing else changed.
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

// Userns is what a tier's containerd does with a `hostUsers: false` pod
// (CRI userns_options) with the tier's delegate runtime behind specshim.
enum class Userns {
  ignored,                // the pod runs, in the host's user namespace
  runs,                   // the pod runs in a user namespace with the requested mappings
  refused_without_idmap,  // StartContainer fails: the runtime's `features` lack idmap mounts
};

// Tier is the containerd the e2e binary drives and the runtime specshim
// delegates to. Every case runs on every tier (the crun tier: the cases its
// test spec in test/e2e/CMakeLists.txt names); what differs between
// containerd versions and runtimes is asserted from here.
struct Tier {
  std::string name;           // "1.6", "1.7" or "2"
  std::filesystem::path bin;  // containerd, ctr and containerd-shim-runc-v2
  // delegate: "runc-1.1" (Debian 12's runc 1.1.5), "runc-1.3" or "crun" (from
  // Debian sid: scripts/fetch-runtimes.sh); runtime: its binary, which the
  // harness's recorder (specshim's [runtime] path) execs.
  std::string delegate;
  std::filesystem::path runtime;
  int config_version = 2;  // 2: containerd 1.x, 3: 2.x
  // cri_cdi: containerd resolves CRI CDI requests itself (annotations and the
  // CDI_devices field) before the runtime runs: 1.7 with enable_cdi, 2.x.
  bool cri_cdi = false;
  // calls_features: containerd execs `BinaryName features` when CRI starts.
  bool calls_features = false;
  // error_suffix follows the runtime's message in CRI errors (": unknown" on 1.x).
  std::string error_suffix;
  // userns: a pod with userns_options (which also needs Setup::cni).
  Userns userns = Userns::ignored;
  // userns_typeless_bind_crashes: the delegate (crun 1.28) segfaults creating
  // a user-namespaced container that has a bind mount without `type` (as CDI
  // specs' mounts come).
  bool userns_typeless_bind_crashes = false;
};

// tier: this binary's tier (tier_name(), delegate_name()), its binaries found
// in $SPECSHIM_CONTAINERD_<1_7|2>_DIR or the fetch-containerd.sh cache, its
// runtime in $SPECSHIM_RUNC_1_3 / $SPECSHIM_CRUN or the fetch-runtimes.sh
// cache. Throws, saying how to provide them, when they are missing: a tier
// never skips.
const Tier& tier();
// tier_name: "1.6", "1.7" or "2", defined by each tier's binary (tier_name.cpp).
const char* tier_name();
// delegate_name: "runc-1.1", "runc-1.3" or "crun", defined likewise.
const char* delegate_name();

inline constexpr const char* kImage = "localhost/specshim-e2e/busybox:1";
inline constexpr const char* kHandler = "specshim";           // the RuntimeClass handler
inline constexpr const char* kCtrNamespace = "specshim-e2e";  // ctr's containerd namespace

// poll_until calls done() until it returns true or `deadline` has passed;
// returns done()'s last answer. The only way these tests wait for anything.
bool poll_until(const std::function<bool()>& done, std::chrono::milliseconds deadline,
                std::chrono::milliseconds step = std::chrono::milliseconds(20));

// tail: the last `bytes` of s, with "..." before them when cut (for failure
// messages).
std::string tail(const std::string& s, std::size_t bytes);

// cri_when_ready: a CRI client of `socket` once Version answers, each try on
// a fresh channel (one that tried before the server listened keeps backing
// off); nullptr when `up` turns false or `deadline` passes first.
std::unique_ptr<CriClient> cri_when_ready(const std::string& socket, std::chrono::milliseconds deadline,
                                          const std::function<bool()>& up);

// Containerd owns everything of one containerd instance under dir():
// root/, state/, containerd.sock, config.toml, containerd.log, and for
// specshim: specshim.toml (its SPECSHIM_CONFIG), specshim.log (its debug
// log), runtime-calls.log (argv of every runtime call specshim made, through
// a recording wrapper set as specshim's [runtime] path that then execs the
// tier's delegate). With crun as the delegate on a cgroup v1 hybrid host, the
// first harness moves the controllers cgroup2 holds to v1 hierarchies of
// their own (crun refuses such a host otherwise) and says so. No CNI unless
// Setup::cni: host-network pods only. restrict_oom_score_adj: this VM lacks
// CAP_SYS_RESOURCE.
//
// The constructor returns once CRI answers and the busybox image is imported
// into the ctr namespace and k8s.io and known to CRI. The destructor tears
// down even after a failed test: pods, ctr tasks, containerd, then any shim,
// container process, runc state, mount and cgroup left behind. A test process
// killed before its teardown (ctest timeout) leaves its dir marked with its
// pid (e2e-owner); the next harness cleans that up.
// Setup changes what a Containerd starts with.
struct Setup {
  // handler: register the specshim handler from the shipped snippet. Without
  // it containerd has only its default handler runc.
  bool handler = true;
  // on_node: containerd runs as on the node whose / is node_root(): started
  // with node_root()/etc/containerd/config.toml (the harness writes it before
  // `install` runs) in a mount namespace of its own where
  // node_root()/etc/containerd is /etc/containerd, so that node paths an
  // installer wrote (a drop-in in `imports`) resolve as on that node.
  bool on_node = false;
  // install runs after the config is written and before containerd starts.
  std::function<void(const class Containerd&)> install;
  // cni: a pod network for pods that ask for one (network POD), from
  // test/fakes/fake-cni.sh in dir()/cni/bin and a conflist in cni/net.d: an
  // empty network namespace, no interface made, no traffic. The namespaces
  // are mounted under state/ (netns_mounts_under_state_dir), not /run/netns.
  bool cni = false;
  // userns: dir() searchable by all (0711, a temp dir is 0700): runc's init,
  // as the mapped root of a pod's user namespace, reaches the rootfs under
  // state/ (containerd keeps the dirs below it searchable or group-owned by
  // the mapped root).
  bool userns = false;
  // nri: containerd's NRI on (as 2.x ships it), with its socket at
  // nri_socket() and no pre-launched plugins; otherwise NRI is disabled.
  bool nri = false;
  // runc_binary: the default runc handler's BinaryName (options.BinaryName),
  // as a node whose handler runs NVIDIA's runtime has it; empty: runc.
  std::string runc_binary = {};
};

class Containerd {
 public:
  explicit Containerd(Setup setup = {});
  ~Containerd();
  Containerd(const Containerd&) = delete;
  Containerd& operator=(const Containerd&) = delete;

  const std::filesystem::path& dir() const { return tmp_.path(); }
  // cdi_dir: the CDI spec dir containerd's own CDI reads (1.7, 2.x), which
  // specshim's [cdi] spec-dirs must equal.
  std::filesystem::path cdi_dir() const { return dir() / "cdi"; }
  std::filesystem::path node_root() const { return dir() / "node"; }
  // config_file: the containerd config containerd was started with.
  std::filesystem::path config_file() const;
  std::string socket() const { return (dir() / "containerd.sock").string(); }
  std::string nri_socket() const { return (dir() / "nri.sock").string(); }
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

  // restart stops containerd (SIGTERM, as a node's service manager does)
  // and starts it again on the same root and state: its pods and
  // containers stay, and an NRI socket is made anew.
  void restart();

  // pod_config is a kubelet-like sandbox config: host network, log directory
  // and a cgroup parent owned by this harness.
  cri::PodSandboxConfig pod_config(const std::string& name) const;

 private:
  void write_containerd_config() const;
  void install_fake_cni() const;
  void start();
  void import_image();
  bool alive();
  void teardown() noexcept;
  void remove_pods() noexcept;
  void remove_ctr_tasks() noexcept;
  void stop_containerd() noexcept;

  test::TempDir tmp_;
  Setup setup_;
  std::string cgroup_root_;  // first cgroup path element of every pod, unique to this harness
  pid_t pid_ = -1;
  std::unique_ptr<CriClient> cri_;
};

}  // namespace specshim::e2e
