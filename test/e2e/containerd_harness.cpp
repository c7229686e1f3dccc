// SPDX-License-Identifier: Apache-2.0
#include "containerd_harness.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "harness_cleanup.h"
#include "runtimes.h"

namespace specshim::e2e {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char* kPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// search_path: the tier's binaries first, so that containerd finds its own
// containerd-shim-runc-v2.
std::string search_path() {
  return tier().bin.string() + ":" + kPath;
}

// The shipped snippet for the tier's containerd with its one BinaryName line
// pointed at the built binary.
std::string handler_snippet() {
  const std::string file = std::string(E2E_SOURCE_DIR) + "/containerd-config/containerd-" +
                           (tier().config_version == 2 ? "1" : "2") + ".x.toml";
  std::string text = test::read_file(file);
  const std::string from = "BinaryName = \"/usr/bin/specshim\"";
  auto at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos)
    throw std::runtime_error(file + ": expected exactly one `" + from + "` line");
  return text.replace(at, from.size(), "BinaryName = \"" SPECSHIM_BINARY "\"");
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// with_containerd: tier t's containerd (t.delegate already set).
void with_containerd(Tier& t) {
  t.name = tier_name();
  if (t.name == "1.6") {  // Debian 12's own
    t.bin = fs::path(E2E_CONTAINERD).parent_path();
    t.error_suffix = ": unknown";
    // Measured (docs/user-namespaces.md): 1.6.20 does not know CRI's
    // userns_options; the container's uid_map is `0 0 4294967295`.
    t.userns = Userns::ignored;
    return;
  }
  const std::string var = t.name == "1.7" ? "SPECSHIM_CONTAINERD_1_7_DIR" : "SPECSHIM_CONTAINERD_2_DIR";
  const char* given = std::getenv(var.c_str());
  t.bin = given && *given ? fs::path(given) : fs::path(test::cache_dir()) / ("containerd-" + t.name) / "usr/bin";
  for (const char* binary : {"containerd", "ctr", "containerd-shim-runc-v2"})
    if (::access((t.bin / binary).c_str(), X_OK) != 0)
      throw std::runtime_error("containerd " + t.name + " tier: no executable " + (t.bin / binary).string() +
                               ". Run scripts/install-deps.sh (scripts/fetch-containerd.sh downloads containerd " +
                               t.name + " from Debian), or set " + var +
                               " to a directory with containerd, ctr and containerd-shim-runc-v2");
  t.config_version = t.name == "1.7" ? 2 : 3;
  t.cri_cdi = true;
  t.calls_features = t.name != "1.7";
  t.error_suffix = t.name == "1.7" ? ": unknown" : "";
  // Measured with runc 1.1.5 (docs/user-namespaces.md): 1.7.24 runs the
  // pod in a user namespace (rootfs a chowned copy of the snapshot; a pod
  // network is needed: host network fails "unable to set hostname without a
  // private UTS namespace"). 2.1.9 puts uidMappings on the /etc/hosts,
  // hostname and resolv.conf binds and refuses every container at
  // StartContainer ("idmap mounts not supported: missing
  // `mountExtensions.idmap` entry in `features` command"): runc < 1.2 has
  // no idmap mounts. With runc 1.3.6 or crun 1.28 as the delegate (their
  // `features` list mountExtensions.idmap) 2.1.9 runs the pod.
  t.userns = t.name == "1.7" || t.delegate != "runc-1.1" ? Userns::runs : Userns::refused_without_idmap;
  // Measured with crun 1.28 (Debian sid): its container process dies of
  // SIGSEGV on a bind mount without `type` in a user namespace.
  t.userns_typeless_bind_crashes = t.delegate == "crun";
}

// with_delegate: tier t with specshim's delegate, from the system (runc
// 1.1.5) or named by $SPECSHIM_RUNC_1_3 / $SPECSHIM_CRUN or unpacked and
// patched by scripts/fetch-runtimes.sh.
void with_delegate(Tier& t) {
  t.delegate = delegate_name();
  if (t.delegate == "runc-1.1") {
    t.runtime = E2E_RUNC;
    return;
  }
  t.runtime = test::runtime_binary(t.delegate, t.delegate + " delegate tier");
}

}  // namespace

const Tier& tier() {
  static const Tier t = [] {
    Tier t;
    with_delegate(t);
    with_containerd(t);
    return t;
  }();
  return t;
}

bool poll_until(const std::function<bool()>& done, std::chrono::milliseconds deadline, std::chrono::milliseconds step) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= end) return done();
    std::this_thread::sleep_for(step);
  }
  return true;
}

std::string tail(const std::string& s, std::size_t bytes) {
  return s.size() <= bytes ? s : "..." + s.substr(s.size() - bytes);
}

std::unique_ptr<CriClient> cri_when_ready(const std::string& socket, std::chrono::milliseconds deadline,
                                          const std::function<bool()>& up) {
  std::unique_ptr<CriClient> cri;
  bool ready = poll_until(
      [&] {
        if (!up()) return true;
        if (!fs::exists(socket)) return false;
        try {
          cri = std::make_unique<CriClient>(socket);
          cri->version(1s);
          return true;
        } catch (const RpcError&) {
          return false;
        }
      },
      deadline, 50ms);
  if (!ready || !up()) cri.reset();
  return cri;
}

Containerd::Containerd(Setup setup) : setup_(std::move(setup)), cgroup_root_(cgroup_root_of(tmp_.path())) {
  // A reader that goes away (`e2e_test | head`) must not kill the test before its teardown.
  ::signal(SIGPIPE, SIG_IGN);
  test::write_file(dir() / "e2e-owner", std::to_string(::getpid()));
  sweep_stale(dir().parent_path(), dir());
  try {
    if (tier().delegate == "crun") test::free_cgroup2_controllers("crun tier", "e2e harness");
    test::write_file(dir() / "runc-recorder",
                     "#!/bin/sh\n"
                     "# specshim's [runtime] path: record the argv specshim hands over, then be the delegate.\n"
                     "printf '%s\\n' \"$*\" >> '" +
                         (dir() / "runtime-calls.log").string() +
                         "'\n"
                         "exec '" +
                         tier().runtime.string() + "' \"$@\"\n",
                     0755);
    set_specshim_config();
    if (setup_.cni) install_fake_cni();
    if (setup_.userns) fs::permissions(dir(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
    fs::create_directories(dir() / "pods");
    fs::create_directories(cdi_dir());
    write_containerd_config();
    if (setup_.install) setup_.install(*this);
    start();
    import_image();
  } catch (...) {
    teardown();
    throw;
  }
}

Containerd::~Containerd() {
  teardown();
}

void Containerd::set_specshim_config(const std::string& extra_toml) {
  test::write_file(dir() / "specshim.toml", "[runtime]\npath = \"" + (dir() / "runc-recorder").string() +
                                                "\"\n\n[log]\nfile = \"" + (dir() / "specshim.log").string() +
                                                "\"\nlevel = \"debug\"\n\n" + extra_toml);
}

void Containerd::set_specshim_config_file(const std::string& text) {
  test::write_file(dir() / "specshim.toml", text);
}

void Containerd::install_fake_cni() const {
  const std::string plugin = test::read_file(E2E_SOURCE_DIR "/test/fakes/fake-cni.sh");
  for (const char* name : {"specshim-e2e-fake", "loopback"}) test::write_file(dir() / "cni/bin" / name, plugin, 0755);
  test::write_file(dir() / "cni/net.d/10-specshim-e2e.conflist",
                   R"({"cniVersion": "1.0.0", "name": "specshim-e2e", "plugins": [{"type": "specshim-e2e-fake"}]})"
                   "\n");
}

fs::path Containerd::config_file() const {
  return setup_.on_node ? node_root() / "etc/containerd/config.toml" : dir() / "config.toml";
}

// The node's own settings, as a node's config has them: a private root,
// state and socket, debug logs, busybox as the sandbox image, no CNI (the
// fake's with Setup::cni), and (1.7, 2.x) CRI's CDI on with our spec dir.
// Then the handler, as shipped.
void Containerd::write_containerd_config() const {
  const int version = tier().config_version;
  const std::string cri_runtime =
      version == 2 ? "plugins.\"io.containerd.grpc.v1.cri\"" : "plugins.\"io.containerd.cri.v1.runtime\"";
  std::string config = "# specshim e2e: a private containerd " + tier().name +
                       " (root, state, socket under one temp dir).\n"
                       "version = " +
                       std::to_string(version) + "\n";
  if (version == 3 && setup_.handler) config += "imports = [\"@DIR@/conf.d/*.toml\"]\n";
  config += R"(root = "@DIR@/root"
state = "@DIR@/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"@NRI@]
[grpc]
  address = "@DIR@/containerd.sock"
[debug]
  level = "debug"
[plugins."io.containerd.internal.v1.opt"]
  path = "@DIR@/opt"
)";
  const auto nri_at = config.find("@NRI@");
  config.replace(nri_at, 5, setup_.nri ? "" : ", \"io.containerd.nri.v1.nri\"");
  if (setup_.nri)
    config +=
        "[plugins.\"io.containerd.nri.v1.nri\"]\n  disable = false\n  socket_path = \"@DIR@/nri.sock\"\n"
        "  plugin_path = \"@DIR@/nri-plugins\"\n  plugin_config_path = \"@DIR@/nri-conf.d\"\n";
  if (version == 2)
    config += "[" + cri_runtime + "]\n  sandbox_image = \"" + kImage + "\"\n";
  else
    config += "[plugins.\"io.containerd.cri.v1.images\".pinned_images]\n  sandbox = \"" + std::string(kImage) +
              "\"\n[" + cri_runtime + "]\n";
  config += "  restrict_oom_score_adj = true\n";
  if (tier().cri_cdi) config += "  enable_cdi = true\n  cdi_spec_dirs = [\"@DIR@/cdi\"]\n";
  // Pod network namespaces as bind mounts under state/, which the teardown
  // unmounts with everything else, instead of /run/netns.
  if (setup_.cni) config += "  netns_mounts_under_state_dir = true\n";
  config += "  [" + cri_runtime + ".containerd.runtimes.runc]\n    runtime_type = \"io.containerd.runc.v2\"\n";
  if (!setup_.runc_binary.empty())
    config +=
        "  [" + cri_runtime + ".containerd.runtimes.runc.options]\n    BinaryName = \"" + setup_.runc_binary + "\"\n";
  config += "  [" + cri_runtime + ".cni]\n    bin_dir = \"@DIR@/cni/bin\"\n    conf_dir = \"@DIR@/cni/net.d\"\n";
  // 2.x brings up lo itself; 1.x runs the `loopback` plugin (the fake).
  if (setup_.cni && version == 3) config += "    use_internal_loopback = true\n";
  for (auto at = config.find("@DIR@"); at != std::string::npos; at = config.find("@DIR@", at))
    config.replace(at, 5, dir().string());
  if (setup_.handler && version == 2)
    config +=
        "\n# The shipped handler, appended as install-on-host.sh does on a containerd 1.x node.\n" + handler_snippet();
  if (setup_.handler && version == 3)
    test::write_file(dir() / "conf.d/specshim.toml", handler_snippet());  // as shipped, through imports
  if (setup_.on_node) fs::create_directories(config_file().parent_path());
  test::write_file(config_file(), config);
}

void Containerd::start() {
  const std::string config = config_file().string();
  const std::string containerd = (tier().bin / "containerd").string();
  const std::string node_etc = (node_root() / "etc/containerd").string();
  if (setup_.on_node) fs::create_directories("/etc/containerd");
  const std::string log = (dir() / "containerd.log").string();
  const std::string env_path = "PATH=" + search_path();
  const std::string env_config = "SPECSHIM_CONFIG=" + (dir() / "specshim.toml").string();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork containerd failed");
  if (pid_ == 0) {
    ::setpgid(0, 0);
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (setup_.on_node) {
      // The node's /etc/containerd, in a mount namespace that nothing leaves.
      if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount(node_etc.c_str(), "/etc/containerd", nullptr, MS_BIND, nullptr) != 0) {
        ::dprintf(2, "e2e harness: mount namespace for %s: %s\n", node_etc.c_str(), ::strerror(errno));
        ::_exit(126);
      }
    }
    const char* argv[] = {containerd.c_str(), "--config", config.c_str(), nullptr};
    const char* envp[] = {env_path.c_str(), env_config.c_str(), "HOME=/root", nullptr};
    ::execve(argv[0], const_cast<char**>(argv), const_cast<char**>(envp));
    ::_exit(127);
  }
  test::write_file(dir() / "containerd.pid", std::to_string(pid_));
  cri_ = cri_when_ready(socket(), 30s, [&] { return alive(); });
  if (!alive()) throw std::runtime_error("containerd exited during start-up\n" + diagnostics());
  if (!cri_) throw std::runtime_error("containerd's CRI did not answer within 30s\n" + diagnostics());
}

void Containerd::import_image() {
  for (const char* ns : {kCtrNamespace, "k8s.io"}) {
    auto r = ctr({"--namespace", ns, "images", "import", E2E_IMAGE_TAR});
    if (r.exit_code != 0) throw std::runtime_error("ctr images import: " + r.out + r.err + "\n" + diagnostics());
  }
  // CRI learns of images from containerd's events; wait until it has this one.
  if (!poll_until([&] { return cri_->image_present(kImage); }, 20s))
    throw std::runtime_error(std::string("CRI does not see ") + kImage + "\n" + diagnostics());
}

void Containerd::restart() {
  stop_containerd();
  if (alive()) throw std::runtime_error("containerd did not stop\n" + diagnostics());
  cri_.reset();
  start();
}

bool Containerd::alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) pid_ = -1;
  return pid_ > 0;
}

test::ProcessResult Containerd::ctr(const std::vector<std::string>& args, int timeout_ms) const {
  std::vector<std::string> argv = {(tier().bin / "ctr").string(), "--address", socket()};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_process(argv, {{"PATH", search_path()}}, timeout_ms);
}

std::vector<std::string> Containerd::runtime_calls() const {
  return split_lines(read_or_empty(dir() / "runtime-calls.log"));
}

std::vector<pid_t> Containerd::shim_pids() const {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit) &&
        is_shim_of(cmdline(entry.path()), socket()))
      out.push_back(std::stoi(name));
  }
  return out;
}

std::string Containerd::specshim_log() const {
  return read_or_empty(dir() / "specshim.log");
}

std::string Containerd::diagnostics() const {
  return "--- containerd.log (tail)\n" + tail(read_or_empty(dir() / "containerd.log"), 4000) +
         "\n--- specshim.log (tail)\n" + tail(specshim_log(), 2000);
}

cri::PodSandboxConfig Containerd::pod_config(const std::string& name) const {
  cri::PodSandboxConfig pod;
  std::string uid = "uid-" + name + "-" + std::to_string(::getpid());
  pod.mutable_metadata()->set_name(name);
  pod.mutable_metadata()->set_namespace_("default");
  pod.mutable_metadata()->set_uid(uid);
  pod.set_log_directory((dir() / "pods" / ("default_" + name + "_" + uid)).string());
  (*pod.mutable_labels())["io.kubernetes.pod.name"] = name;
  auto* linux = pod.mutable_linux();
  linux->set_cgroup_parent("/" + cgroup_root_ + "/pod" + uid);
  linux->mutable_security_context()->mutable_namespace_options()->set_network(cri::NODE);
  return pod;
}

// ---- teardown: each step is best effort and never throws -------------------

void Containerd::teardown() noexcept {
  if (alive()) {
    remove_pods();
    remove_ctr_tasks();
  }
  stop_containerd();
  clean_up_after(dir());
  cri_.reset();
}

void Containerd::remove_pods() noexcept {
  try {
    for (const auto& pod : cri_->list_pod_sandboxes()) {
      try {
        cri_->stop_pod_sandbox(pod.id());
        cri_->remove_pod_sandbox(pod.id());
      } catch (const std::exception&) {
      }
    }
  } catch (const std::exception&) {
  }
}

void Containerd::remove_ctr_tasks() noexcept {
  try {
    auto ns = std::vector<std::string>{"--namespace", kCtrNamespace};
    auto with = [&](std::vector<std::string> args) {
      args.insert(args.begin(), ns.begin(), ns.end());
      return ctr(args, 20000);
    };
    for (const auto& id : split_lines(with({"tasks", "list", "--quiet"}).out)) {
      with({"tasks", "kill", "--signal", "SIGKILL", id});
      with({"tasks", "delete", "--force", id});
    }
    for (const auto& id : split_lines(with({"containers", "list", "--quiet"}).out)) with({"containers", "delete", id});
  } catch (const std::exception&) {
  }
}

void Containerd::stop_containerd() noexcept {
  if (!alive()) return;
  ::kill(pid_, SIGTERM);
  if (!poll_until([&] { return !alive(); }, 10s)) {
    ::kill(pid_, SIGKILL);
    poll_until([&] { return !alive(); }, 5s);
  }
}

}  // namespace specshim::e2e
