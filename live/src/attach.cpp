// SPDX-License-Identifier: Apache-2.0
// The steps attach, detach and reconcile take on a live container (see
// specshim/live/attach.h): open it, plan what is wanted (attach_wanted.cpp)
// against the record, and move the container there under the bundle's lock,
// each step undone in reverse when a later one fails: (1) the cgroup rules (v1
// devices.allow/deny, the v2 device program rebuilt from the record,
// systemd's DeviceAllow=), (2) nodes and mounts removed, (3) nodes and bind
// mounts made inside the container's mount namespace, (4) the record
// <bundle>/specshim-attached.json. See docs/attach.md.
#include "specshim/live/attach.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "specshim/base/command.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/live/cgroup_devices.h"
#include "specshim/live/container.h"
#include "specshim/live/device_rules.h"

namespace specshim::live::attach {
namespace {

namespace sfs = std::filesystem;
using namespace std::chrono_literals;

void write_record(const Target& t, const Record& r) {
  fs::write_file_atomic(t.state.bundle, kRecordFile, record_json(r), 0644);
}

// ---- undo ----

// UndoStack runs the undos of the applied steps in reverse.
class UndoStack {
 public:
  void push(std::string what, live::Undo undo) { steps_.emplace_back(std::move(what), std::move(undo)); }
  // rollback returns "" or "; undo failed: <what>: <why>" for each failure.
  std::string rollback() {
    std::string failed;
    for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
      try {
        if (it->second) it->second();
      } catch (const std::exception& e) {
        failed += "; undo failed: " + it->first + ": " + describe(e);
      }
    }
    steps_.clear();
    return failed;
  }

 private:
  std::vector<std::pair<std::string, live::Undo>> steps_;
};

// apply runs the steps, rolling back and rethrowing on any failure.
template <typename Fn>
void apply(Fn&& steps) {
  UndoStack undo;
  try {
    steps(undo);
  } catch (const std::exception& e) {
    std::string failed = undo.rollback();
    throw Error(describe(e) + (failed.empty() ? "; nothing was changed" : failed));
  }
}

// ---- rules ----

live::DeviceRule rule_of(const RecordedDevice& d, bool allow = true, std::string access = "") {
  return live::DeviceRule{allow, d.type, d.major, d.minor, access.empty() ? d.permissions : access};
}

// missing is the part of d's access that rules do not grant.
std::string missing(const std::vector<live::DeviceRule>& rules, const RecordedDevice& d) {
  std::string out;
  for (char c : d.permissions)
    if (!live::reference_decision(rules, live::Access{d.type, d.major, d.minor, c})) out += c;
  return out;
}

bool same_rule(const RecordedDevice& a, const RecordedDevice& b) {
  return a.type == b.type && a.major == b.major && a.minor == b.minor && a.permissions == b.permissions;
}

// run_systemctl sets the request's DeviceAllow= and adds a warning for each
// rule it has no form for.
void run_systemctl(const live::SystemdRequest& req, std::vector<std::string>& warnings) {
  for (const auto& rule : req.unsupported)
    warnings.push_back("systemd unit " + q(req.unit) + ": rule " + q(rule) +
                       " has no DeviceAllow= form; a daemon-reload will not restore it");
  auto argv = req.systemctl_argv();
  CommandResult r = run_command(argv, 10s);
  if (r.timed_out) throw Error("systemctl set-property " + q(req.unit) + ": no answer within 10 s");
  if (r.exit_code != 0)
    throw Error("systemctl set-property " + q(req.unit) + ": " + (r.err.empty() ? "failed" : r.err));
}

// change_rules moves the container's cgroups from allowing `before` to
// allowing `after` (both the recorded device lists), pushing each change's
// undo. v1: devices.allow for what after adds and `before` did not grant;
// devices.deny for exactly what before granted and after no longer does
// (never what the spec or runc's defaults grant). v2: when a device program
// is attached to the container's cgroup2 directory, it is replaced by one
// built from the whole effective list. systemd: DeviceAllow= as a runtime
// property when systemd is PID 1 and owns the cgroup.
void change_rules(const Target& t, const live::CgroupPlaces& places, const std::vector<DeviceRule>& create_rules,
                  const std::vector<RecordedDevice>& before, const std::vector<RecordedDevice>& after, UndoStack& undo,
                  std::vector<std::string>& warnings) {
  auto rules_before = enforced_rules(t.spec, create_rules, before);
  auto rules_after = enforced_rules(t.spec, create_rules, after);
  auto in = [](const std::vector<RecordedDevice>& list, const RecordedDevice& d) {
    return std::any_of(list.begin(), list.end(), [&](const RecordedDevice& e) { return same_rule(e, d); });
  };
  if (places.v1_devices) {
    const sfs::path& dir = *places.v1_devices;
    for (const auto& d : after) {
      if (in(before, d)) continue;
      std::string need = missing(rules_before, d);
      if (need.empty()) continue;
      live::v1_write(dir, rule_of(d));
      undo.push("devices.deny " + numbers(d), [dir, d, need] { live::v1_write(dir, rule_of(d, false, need)); });
    }
    for (const auto& d : before) {
      if (in(after, d)) continue;
      std::string revoke = missing(rules_after, d);
      if (revoke.empty()) continue;
      live::v1_write(dir, rule_of(d, false, revoke));
      undo.push("devices.allow " + numbers(d), [dir, d] { live::v1_write(dir, rule_of(d)); });
    }
  }
  // Under systemd the cgroup2 directory holds systemd's program (rebuilt
  // from DeviceAllow= below, on every reload too) beside runc's or ours.
  const bool systemd = !places.systemd_unit.empty() && live::systemd_is_pid1();
  if (places.unified && !live::attached_device_programs(*places.unified).empty())
    undo.push("the previous device program of " + q(places.unified->string()),
              live::replace_device_program(*places.unified, rules_after, systemd));
  if (systemd) {
    run_systemctl(live::systemd_device_allow(places.systemd_unit, rules_after), warnings);
    // An undo reports failure, not warnings: the rules it restores were
    // the container's before.
    auto req = live::systemd_device_allow(places.systemd_unit, rules_before);
    undo.push("DeviceAllow= of " + q(places.systemd_unit), [req] {
      std::vector<std::string> ignored;
      run_systemctl(req, ignored);
    });
  }
}

// ---- what to attach ----

live::NodeRequest node_request(const RecordedDevice& d) {
  return live::NodeRequest{d.path, d.host_path, d.type, d.major, d.minor, d.file_mode, d.uid, d.gid};
}

live::MountRequest mount_request(const RecordedMount& m) {
  live::MountRequest r;
  r.host_path = m.host_path;
  r.container_path = m.path;
  for (const auto& o : m.options) {
    if (o == "ro") r.read_only = true;
    if (o == "nosuid") r.nosuid = true;
    if (o == "nodev") r.nodev = true;
    if (o == "noexec") r.noexec = true;
    if (o == "rbind") r.recursive = true;
  }
  return r;
}

template <typename T>
void add_refs(T& into, const T& from) {
  auto add = [](std::vector<std::string>& to, const std::vector<std::string>& refs) {
    for (const auto& n : refs)
      if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
  };
  add(into.cdi, from.cdi);
  add(into.reconcile, from.reconcile);
}

// add_dirs records the directories attach made, once each.
void add_dirs(Record& r, const std::vector<std::string>& made) {
  for (const auto& d : made)
    if (std::find(r.dirs.begin(), r.dirs.end(), d) == r.dirs.end()) r.dirs.push_back(d);
}

// same_device: the same node at the same path with the same rule.
bool same_device(const RecordedDevice& a, const RecordedDevice& b) {
  return a.path == b.path && a.host_path == b.host_path && same_rule(a, b);
}

bool same_mount(const RecordedMount& a, const RecordedMount& b) {
  return a.path == b.path && a.host_path == b.host_path && a.options == b.options;
}

template <typename T, typename Same>
std::vector<std::size_t> not_in(const std::vector<T>& from, const std::vector<T>& other, Same same) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < from.size(); ++i)
    if (std::none_of(other.begin(), other.end(), [&](const T& o) { return same(from[i], o); })) out.push_back(i);
  return out;
}

}  // namespace

Target open_target(const Setup& setup, const std::string& id, bool require_live) {
  if (::geteuid() != 0)
    throw Error("container " + q(id) + ": must run as root on the host (euid " + std::to_string(::geteuid()) +
                "): it changes the container's cgroup and enters its mount namespace");
  live::ContainerState state = live::runtime_state(setup.runtime, setup.root, id);
  live::Process process;
  if (require_live) {
    live::require_live(state);
    process = live::pin(setup.runtime, setup.root, state);
  }
  sfs::path config = state.bundle / "config.json";
  Spec spec = [&] {
    try {
      return Spec::parse(fs::read_regular_file(config, kMaxSpecBytes));
    } catch (const Error& e) {
      std::throw_with_nested(Error("container " + q(id) + ": read " + q(config.string())));
    }
  }();
  return Target{id, std::move(state), std::move(process), std::move(spec)};
}

BundleLock::BundleLock(const sfs::path& bundle) {
  std::string path = (bundle / kLockFile).string();
  fd_ = fs::Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd_) throw_errno("open lock file " + q(path));
  fs::lock_within(fd_.get(), LOCK_EX, 30s, path, "another attach, detach or reconcile");
}

// plan merges what is wanted into the record: a node at a path already
// attached with the same device and permissions only gains a reference;
// another device there is an error.
Plan plan(Record rec, const Wanted& w) {
  Plan p;
  for (const auto& d : w.devices) {
    auto it = std::find_if(rec.devices.begin(), rec.devices.end(), [&](const auto& e) { return e.path == d.path; });
    if (it == rec.devices.end()) {
      p.new_devices.push_back(rec.devices.size());
      rec.devices.push_back(d);
      continue;
    }
    if (!same_rule(*it, d))
      throw Error("container path " + q(d.path) + " is taken by " + numbers(*it) + " " + it->permissions +
                  " (attached by " + attached_by(*it) + "); asked for " + numbers(d) + " " + d.permissions);
    it->direct = it->direct || d.direct;
    add_refs(*it, d);
  }
  for (const auto& m : w.mounts) {
    auto it = std::find_if(rec.mounts.begin(), rec.mounts.end(), [&](const auto& e) { return e.path == m.path; });
    if (it == rec.mounts.end()) {
      p.new_mounts.push_back(rec.mounts.size());
      rec.mounts.push_back(m);
      continue;
    }
    if (it->host_path != m.host_path || it->options != m.options)
      throw Error("container path " + q(m.path) + " is taken by a bind mount of " + q(it->host_path));
    add_refs(*it, m);
  }
  for (const auto& n : w.not_applied)
    if (std::find(rec.not_applied.begin(), rec.not_applied.end(), n) == rec.not_applied.end())
      rec.not_applied.push_back(n);
  p.record = std::move(rec);
  return p;
}

Released release(Record rec, const Release& r) {
  for (const auto& path : r.devices) {
    auto it = std::find_if(rec.devices.begin(), rec.devices.end(), [&](const auto& e) { return e.path == path; });
    if (it == rec.devices.end()) throw Error("device " + q(path) + " is not attached");
    if (!it->direct) {
      std::string how = it->cdi.empty() ? "remove it from the desired-state file" : "detach it with --cdi";
      throw Error("device " + q(path) + " was attached by " + attached_by(*it) + "; " + how);
    }
    it->direct = false;
  }
  for (const auto& name : r.cdi) {
    bool found = false;
    auto drop = [&](std::vector<std::string>& refs) { found = std::erase(refs, name) > 0 || found; };
    for (auto& d : rec.devices) drop(d.cdi);
    for (auto& m : rec.mounts) drop(m.cdi);
    found = std::erase_if(rec.not_applied, [&](const NotApplied& e) { return e.cdi == name; }) > 0 || found;
    if (!found) throw Error("CDI device " + q(name) + " is not attached");
  }
  Released out;
  for (const auto& k : r.wants) {
    for (auto& d : rec.devices) std::erase(d.reconcile, k);
    for (auto& m : rec.mounts) std::erase(m.reconcile, k);
    std::erase(rec.reconciled, k);
    auto w = hotplug::Want::parse(k);
    if (w && w->kind == hotplug::Want::Kind::cdi && std::erase(rec.create_cdi, w->arg)) out.in_spec.push_back(k);
  }
  std::erase_if(rec.devices, [](const RecordedDevice& d) { return !d.held(); });
  std::erase_if(rec.mounts, [](const RecordedMount& m) { return !m.held(); });
  out.record = std::move(rec);
  return out;
}

Change transition(const Target& t, const Record& before, Record after) {
  auto new_devices = not_in(after.devices, before.devices, same_device);
  auto gone_devices = not_in(before.devices, after.devices, same_device);
  auto new_mounts = not_in(after.mounts, before.mounts, same_mount);
  auto gone_mounts = not_in(before.mounts, after.mounts, same_mount);
  Change ch;
  if (after == before) {
    ch.record = std::move(after);
    return ch;
  }
  apply([&](UndoStack& undo) {
    live::CgroupPlaces places = live::cgroup_places(t.state.pid);
    t.process.require_alive();  // the cgroups read are the live container process's
    change_rules(t, places, before.create_rules, before.devices, after.devices, undo, ch.warnings);
    for (auto i = gone_mounts.rbegin(); i != gone_mounts.rend(); ++i) {
      const RecordedMount& m = before.mounts[*i];
      ch.unmounted.push_back(m);
      if (!m.mounted) continue;
      live::remove_mount(t.process, m.path, m.target == "made");
      live::Process pinned = t.process;
      undo.push("mount " + q(m.path) + " again", [pinned, m] { live::bind_mount(pinned, mount_request(m)); });
    }
    for (auto i : gone_devices) {
      const RecordedDevice& d = before.devices[i];
      ch.removed.push_back(d);
      if (d.node == "existing") continue;
      live::remove_node(t.process, node_request(d));
      live::Process pinned = t.process;
      undo.push("make " + q(d.path) + " again", [pinned, d] { live::make_node(pinned, node_request(d)); });
    }
    for (auto i : new_devices) {
      RecordedDevice& d = after.devices[i];
      try {
        live::Placed placed = live::make_node(t.process, node_request(d));
        d.node = live::method_name(placed.method);
        add_dirs(after, placed.made_dirs);
        undo.push("remove " + q(d.path), placed.undo);
      } catch (const std::exception&) {
        std::throw_with_nested(Error("device " + q(d.host_path)));
      }
      ch.made.push_back(d);
    }
    for (auto i : new_mounts) {
      RecordedMount& m = after.mounts[i];
      live::Placed placed = live::bind_mount(t.process, mount_request(m));
      m.mounted = placed.method != live::Method::existing;
      m.target = placed.made_target ? "made" : "existing";
      add_dirs(after, placed.made_dirs);
      undo.push("unmount " + q(m.path), placed.undo);
      ch.mounted.push_back(m);
    }
    // What is made again on undo makes its directories again.
    if (!gone_devices.empty() || !gone_mounts.empty())
      for (const auto& dir : live::remove_empty_dirs(t.process, after.dirs))
        after.dirs.erase(std::remove(after.dirs.begin(), after.dirs.end(), dir), after.dirs.end());
    write_record(t, after);
  });
  ch.record = std::move(after);
  return ch;
}

}  // namespace specshim::live::attach
