// SPDX-License-Identifier: Apache-2.0
// specshim reconcile: make every live container have what the desired-state
// file wants for it. For each created or running container under --root, the
// wants the file lists for it (specshim/node/hotplug.h keys: "device H:C:P",
// "gpu UUID", "cdi NAME") are handed to the hot-plug engine
// (specshim/live/reconcile.h), which attaches the missing ones and detaches
// the extra ones reconcile gave; this file picks each container's wants and
// says what the engine did. --watch repeats on every change of the file and
// every --interval. See docs/reconcile.md.
#include "specshim/live/reconcile.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <iostream>
#include <map>
#include <set>

#include "attach.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/host_device.h"
#include "specshim/modifiers/create.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/modifiers/modifier.h"
#include "specshim/node/hotplug.h"
#include "specshim/node/nvidia_gpus.h"
#include "specshim/node/pod_allocation.h"
#include "verb_cli.h"
#include "verbs.h"

namespace specshim::shim {
namespace {

namespace sfs = std::filesystem;
using namespace attach;
using namespace live::attach;

struct Options {
  std::string root;
  std::string config_file = config::path_from_env().string();
  std::string desired;  // default: [hotplug] desired
  std::string proc;     // default: [hotplug] proc
  bool watch = false;
  std::string interval = "10";
};

bool holds(const std::vector<std::string>& refs, const std::string& key) {
  return std::find(refs.begin(), refs.end(), key) != refs.end();
}

class Reconciler {
 public:
  explicit Reconciler(const Options& o) : config_(read_config_file(o.config_file)), setup_(setup_of(config_, o.root)) {
    const hotplug::Config& hc = config_.hotplug;
    desired_ = o.desired.empty() ? hc.desired : o.desired;
    proc_ = o.proc.empty() ? hc.proc : o.proc;
  }

  const std::string& desired_file() const { return desired_; }

  // pass reconciles every live container once; false when anything failed.
  bool pass() {
    // Errors of the file name it (and the line) themselves.
    std::optional<hotplug::Desired> desired;
    try {
      desired = hotplug::read_desired(desired_);
      if (!desired) throw Error("desired-state file " + q(desired_) + ": no such file");
      try {
        hotplug::check_sharing(*desired, gpu_resolver(*desired), node_key);
      } catch (const std::exception&) {
        std::throw_with_nested(Error(desired_));
      }
    } catch (const std::exception& e) {
      report_once(describe(e) + "; nothing was changed");
      return false;
    }
    last_report_.clear();
    bool ok = true;
    try {
      bound_ = bound_of(config_, proc_);  // read afresh each pass: what the kubelet allocated changes
    } catch (const std::exception& e) {
      std::cerr << "specshim reconcile: " << describe(e) << "\n";
      return false;
    }
    std::vector<live::ContainerState> containers;
    try {
      containers = live::runtime_list(setup_.runtime, setup_.root);
    } catch (const std::exception& e) {
      std::cerr << "specshim reconcile: " << describe(e) << "\n";
      return false;
    }
    std::set<const hotplug::Entry*> matched;
    for (const auto& c : containers) {
      if (c.status != "created" && c.status != "running") continue;
      try {
        ok = reconcile(c, *desired, matched) && ok;
      } catch (const std::exception& e) {
        std::cerr << "specshim reconcile: container " << q(c.id) << ": " << describe(e) << "\n";
        ok = false;
      }
    }
    std::set<std::string> unmatched;
    for (const auto& e : desired->entries)
      if (!matched.count(&e)) unmatched.insert(desired->where(e) + ": " + e.who());
    for (const auto& u : unmatched)
      if (!unmatched_.count(u))
        std::cerr << "specshim reconcile: " << u << ": no such container (created or running, not a pod sandbox)\n";
    unmatched_ = std::move(unmatched);
    std::cout << std::flush;
    return ok;
  }

 private:
  // gpu_resolver maps a UUID to its node for the sharing check, reading the
  // driver's list once per pass; an unknown UUID keeps its name here (the
  // container that wants it fails, not the pass).
  hotplug::GpuNode gpu_resolver(const hotplug::Desired& d) {
    gpus_.reset();
    bool any = std::any_of(d.entries.begin(), d.entries.end(), [](const auto& e) { return !e.gpus.empty(); });
    if (!any) return nullptr;
    try {
      gpus_ = nvidia::read_gpus(proc_);
    } catch (const Error&) {
      gpus_.emplace();  // the containers that want a GPU fail, naming the driver's list
    }
    return [this](const std::string& uuid) {
      try {
        return nvidia::find_gpu(*gpus_, uuid, proc_).node();
      } catch (const Error&) {
        return "GPU " + uuid;
      }
    };
  }

  // node_key: two host paths of one node are one device (symlinks followed
  // as attach follows them); a path that does not resolve keeps its name.
  static std::string node_key(const std::string& path) {
    try {
      HostDevice h = resolve_device(path, "/dev", false);
      return std::string(1, h.type) + " " + std::to_string(h.major) + ":" + std::to_string(h.minor);
    } catch (const Error&) {
      return "";
    }
  }

  bool reconcile(const live::ContainerState& c, const hotplug::Desired& d, std::set<const hotplug::Entry*>& matched) {
    Spec spec = Spec::parse(fs::read_regular_file(c.bundle / "config.json", kMaxSpecBytes));
    // A pod sandbox runs no workload: the hotplug modifier gives it nothing
    // at create, and no entry selects it here either.
    pod_identity::Identity identity;
    try {
      if (pod_identity::kind_of(spec) == ContainerKind::sandbox) return true;
      identity = pod_identity::identify(spec);
    } catch (const Error&) {
      // A malformed specshim.io/pod, or identity keys that disagree, select by id only.
    }
    std::string docker_name;
    try {
      docker_name = hotplug::docker_name_of(d, config_.hotplug, c.id);
    } catch (const Error& e) {
      // Its record unread, `docker` entries cannot select it: said, and the pass goes on.
      std::cerr << "specshim reconcile: container " << q(c.id) << ": " << describe(e) << "\n";
    }
    const hotplug::Entry* entry = hotplug::select(d, c.id, identity, docker_name);
    if (entry) matched.insert(entry);
    std::vector<hotplug::Want> wanted = entry ? entry->wants() : std::vector<hotplug::Want>{};
    std::string who = "container " + q(c.id) + (entry && entry->id.empty() ? " (" + entry->who() + ")" : "");
    try {
      auto done = reconcile_container(setup_, c, wanted, proc_, bound_.get());
      if (!done) return true;
      say(who, *done);
      return done->refused.empty();
    } catch (const std::exception& e) {
      std::cerr << "specshim reconcile: " << who << ": " << describe(e) << "\n";
      return false;
    }
  }

  // say prints what reconcile did to one container.
  static void say(const std::string& who, const Reconciled& r) {
    for (const auto& [k, why] : r.refused) std::cerr << "specshim reconcile: " << who << ": refused " << why << "\n";
    for (const auto& [k, n] : r.not_applied)
      std::cout << who << ": " << k << ": " << n.edit << " " << q(n.value)
                << " not applied (a running container cannot take it)\n";
    const Change& ch = r.change;
    for (const auto& k : r.in_spec)
      std::cout << who << ": " << k << " was put in the spec at create; its nodes and mounts stay until the "
                << "container is created again\n";
    auto by = [](const std::vector<std::string>& refs) { return join(refs, ", "); };
    for (const auto& dev : ch.removed) std::cout << who << ": detached " << dev.path << " (" << numbers(dev) << ")\n";
    for (const auto& m : ch.unmounted) std::cout << who << ": detached " << m.path << " (bind mount)\n";
    for (const auto& dev : ch.made)
      std::cout << who << ": attached " << dev.path << " (" << numbers(dev) << " " << dev.permissions << ", "
                << dev.node << ") for " << by(dev.reconcile) << "\n";
    for (const auto& m : ch.mounted)
      std::cout << who << ": attached " << m.path << " (bind mount) for " << by(m.reconcile) << "\n";
    for (const auto& w : ch.warnings) std::cerr << "specshim reconcile: " << who << ": " << w << "\n";
    // A want whose nodes were already there (attached by hand) is recorded
    // as reconcile's too; one dropped while another holds its node stays.
    auto refused = [&](const std::string& k) {
      return std::any_of(r.refused.begin(), r.refused.end(), [&](const auto& e) { return e.first == k; });
    };
    for (const auto& k : r.added)
      if (!refused(k) &&
          std::none_of(ch.made.begin(), ch.made.end(), [&](const auto& dev) { return holds(dev.reconcile, k); }) &&
          std::none_of(ch.mounted.begin(), ch.mounted.end(), [&](const auto& m) { return holds(m.reconcile, k); }))
        std::cout << who << ": " << k << ": already there; recorded as reconcile's\n";
    for (const auto& k : r.dropped)
      for (const auto& dev : ch.record.devices)
        if (std::any_of(r.before.devices.begin(), r.before.devices.end(),
                        [&](const auto& b) { return b.path == dev.path && holds(b.reconcile, k); }))
          std::cout << who << ": " << k << ": released; " << dev.path << " stays, held by " << attached_by(dev) << "\n";
  }

  // report_once prints a file-level failure once while it stays the same
  // (--watch retries it with backoff).
  void report_once(const std::string& what) {
    if (what == last_report_) return;
    last_report_ = what;
    std::cerr << "specshim reconcile: " << what << "\n";
  }

  ConfigFile config_;
  Setup setup_;
  std::string desired_;
  std::string proc_;
  std::optional<std::vector<nvidia::Gpu>> gpus_;
  std::unique_ptr<pod_allocation::Node> bound_;  // [hotplug] bound = "pod-allocation": this pass's view of the kubelet
  std::string last_report_;
  std::set<std::string> unmatched_;
};

// Watch is what --watch waits on: SIGTERM/SIGINT (a signalfd) and the
// directory of the desired-state file (inotify, so a rename onto it counts).
class Watch {
 public:
  explicit Watch(const sfs::path& file) : name_(file.filename().string()) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) throw_errno("block SIGTERM");
    signals_ = fs::Fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!signals_) throw_errno("signalfd");
    inotify_ = fs::Fd(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (!inotify_) throw_errno("inotify_init1");
    sfs::path dir = file.parent_path().empty() ? sfs::path(".") : file.parent_path();
    if (::inotify_add_watch(inotify_.get(), dir.c_str(),
                            IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE) < 0)
      throw_errno("watch directory " + q(dir.string()));
  }

  enum class Event { stop, file, timeout };
  // wait returns on a signal, a change of the file, or after timeout_ms.
  Event wait(int timeout_ms) {
    pollfd fds[2] = {{signals_.get(), POLLIN, 0}, {inotify_.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, timeout_ms);
    if (n < 0 && errno != EINTR) throw_errno("poll");
    if (n <= 0) return Event::timeout;
    if (fds[0].revents) return Event::stop;
    bool ours = false;
    alignas(inotify_event) char buf[16 * (sizeof(inotify_event) + NAME_MAX + 1)];
    for (ssize_t len; (len = ::read(inotify_.get(), buf, sizeof buf)) > 0;)
      for (char* p = buf; p < buf + len;) {
        auto* ev = reinterpret_cast<inotify_event*>(p);
        if (ev->len && name_ == ev->name) ours = true;
        p += sizeof(inotify_event) + ev->len;
      }
    return ours ? Event::file : Event::timeout;
  }

 private:
  std::string name_;
  fs::Fd signals_;
  fs::Fd inotify_;
};

int watch(Reconciler& r, int interval_s) {
  Watch w(r.desired_file());
  const int interval_ms = interval_s * 1000;
  int backoff_ms = 0;  // after a failed pass: 1 s, doubling, at most the interval
  bool ok = r.pass();
  auto next = std::chrono::steady_clock::now();
  while (true) {
    backoff_ms = ok ? 0 : std::min(interval_ms, backoff_ms ? backoff_ms * 2 : 1000);
    next = std::chrono::steady_clock::now() + std::chrono::milliseconds(ok ? interval_ms : backoff_ms);
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - std::chrono::steady_clock::now());
      auto ev = w.wait(static_cast<int>(std::max<std::int64_t>(0, left.count())));
      if (ev == Watch::Event::stop) return 0;
      if (ev == Watch::Event::file || std::chrono::steady_clock::now() >= next) break;
    }
    ok = r.pass();
  }
}

}  // namespace

int reconcile_main(const std::vector<std::string>& argv) {
  VerbCli cli(
      "Give every live container what the desired-state file wants for it: attach what is missing, detach what "
      "reconcile gave and the file no longer lists.",
      "specshim reconcile");
  Options o;
  cli.option("--root", o.root, "the runtime's state root (runc --root), e.g. /run/containerd/runc/k8s.io");
  cli.option("--config", o.config_file, "specshim config file").show_default();
  cli.option("--desired", o.desired, "the desired-state file (default: [hotplug] desired, /etc/specshim/hotplug.yaml)");
  cli.option("--proc", o.proc, "where the NVIDIA driver's GPU list is (default: [hotplug] proc, /proc)");
  cli.flag("--watch", o.watch, "keep running: reconcile on every change of the file and every --interval");
  cli.option("--interval", o.interval, "with --watch: seconds between passes for containers that started")
      .show_default();
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  try {
    int interval = 0;
    try {
      std::size_t used = 0;
      interval = std::stoi(o.interval, &used);
      if (used != o.interval.size() || interval < 1 || interval > 86400) throw Error("");
    } catch (const std::exception&) {
      throw Error("--interval " + q(o.interval) + ": want whole seconds from 1 to 86400");
    }
    if (::geteuid() != 0)
      throw Error("must run as root on the host (euid " + std::to_string(::geteuid()) +
                  "): it changes containers' cgroups and enters their mount namespaces");
    Reconciler r(o);
    if (o.watch) return watch(r, interval);
    return r.pass() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "specshim reconcile: " << describe(e) << "\n";
    return 1;
  }
}

}  // namespace specshim::shim
