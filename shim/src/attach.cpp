// SPDX-License-Identifier: Apache-2.0
// specshim attach / detach / attached: give a running container a device and
// take it back. Under the bundle's lock, in this order, each step undone in
// reverse when a later one fails: (1) the cgroup rules (v1 devices.allow/deny,
// the v2 device program rebuilt from the record, systemd's DeviceAllow=),
// (2) the node or bind mount inside the container's mount namespace, (3) the
// record <bundle>/specshim-attached.json. See docs/attach.md.
#include "attach.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <set>

#include "host_device.h"
#include "pipeline.h"
#include "runtime.h"
#include "settings.h"
#include "specshim/cdi.h"
#include "specshim/error.h"
#include "specshim/fs.h"
#include "specshim/live/cgroup_devices.h"
#include "specshim/live/container.h"
#include "specshim/live/device_rules.h"
#include "specshim/nvidia_gpus.h"
#include "verb_cli.h"
#include "verbs.h"

namespace specshim::shim {
namespace {

namespace sfs = std::filesystem;
using namespace attach;
using namespace std::chrono_literals;

std::string q(std::string_view s) {
  return "`" + std::string(s) + "`";
}

// ---- the command line ----

struct Common {
  std::string root;
  std::string config_file = config::path_from_env().string();
  std::string id;
};

void add_common(VerbCli& cli, Common& c) {
  cli.option("--root", c.root, "the runtime's state root (runc --root), e.g. /run/containerd/runc/k8s.io");
  cli.option("--config", c.config_file, "specshim config file").show_default();
  cli.option("CONTAINER-ID", c.id, "the container, as the runtime knows it").required();
}

// ---- the container ----

struct Target {
  std::string id;
  live::ContainerState state;
  live::Process process;  // pinned when the container must be live
  config::Document doc;
  Spec spec;
};

Target open_target(const Common& c, bool require_live) {
  if (::geteuid() != 0)
    throw Error("container " + q(c.id) + ": must run as root on the host (euid " + std::to_string(::geteuid()) +
                "): it changes the container's cgroup and enters its mount namespace");
  auto doc = config::Document::load(c.config_file);
  auto root = doc.root();
  Settings settings = read_settings(root);
  std::string runtime = find_runtime(settings.runtime_path);
  live::ContainerState state = live::runtime_state(runtime, c.root, c.id);
  live::Process process;
  if (require_live) {
    live::require_live(state);
    process = live::pin(runtime, c.root, state);
  }
  sfs::path config = state.bundle / "config.json";
  Spec spec = [&] {
    try {
      return Spec::parse(fs::read_regular_file(config, kMaxSpecBytes));
    } catch (const Error& e) {
      std::throw_with_nested(Error("container " + q(c.id) + ": read " + q(config.string())));
    }
  }();
  return Target{c.id, std::move(state), std::move(process), std::move(doc), std::move(spec)};
}

// ---- the bundle's lock and record ----

// BundleLock holds flock(LOCK_EX) on <bundle>/specshim-attached.lock for the
// whole read-modify-write of the record and the cgroup program built from
// it, so concurrent attaches and detaches serialize. It waits at most 30 s.
class BundleLock {
 public:
  explicit BundleLock(const sfs::path& bundle) {
    std::string path = (bundle / kLockFile).string();
    fd_ = fs::Fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd_) throw_errno("open lock file " + q(path));
    auto deadline = std::chrono::steady_clock::now() + 30s;
    timespec pause{0, 2'000'000};
    while (::flock(fd_.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) throw_errno("lock " + q(path));
      if (std::chrono::steady_clock::now() > deadline)
        throw Error("lock " + q(path) + ": another attach or detach has held it for 30 s");
      ::nanosleep(&pause, nullptr);
      pause.tv_nsec = std::min<long>(pause.tv_nsec * 2, 50'000'000);
    }
  }

 private:
  fs::Fd fd_;
};

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

// ---- rules ----

std::string numbers(const RecordedDevice& d) {
  return std::string(1, d.type) + " " + std::to_string(d.major) + ":" + std::to_string(d.minor);
}

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

void run_systemctl(const live::SystemdRequest& req) {
  for (const auto& rule : req.unsupported)
    std::cerr << "specshim: systemd unit " << q(req.unit) << ": rule " << q(rule)
              << " has no DeviceAllow= form; a daemon-reload will not restore it\n";
  auto argv = req.systemctl_argv();
  live::CommandResult r = live::run_command(argv, 10s);
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
void change_rules(const Target& t, const live::CgroupPlaces& places, const std::vector<RecordedDevice>& before,
                  const std::vector<RecordedDevice>& after, UndoStack& undo) {
  auto rules_before = enforced_rules(t.spec, before);
  auto rules_after = enforced_rules(t.spec, after);
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
  if (places.unified && !live::attached_device_programs(*places.unified).empty())
    undo.push("the previous device program of " + q(places.unified->string()),
              live::replace_device_program(*places.unified, rules_after));
  if (!places.systemd_unit.empty() && live::systemd_is_pid1()) {
    run_systemctl(live::systemd_device_allow(places.systemd_unit, rules_after));
    auto req = live::systemd_device_allow(places.systemd_unit, rules_before);
    undo.push("DeviceAllow= of " + q(places.systemd_unit), [req] { run_systemctl(req); });
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

std::string check_path(const std::string& what, const std::string& path) {
  if (auto why = live::check_container_path(path); !why.empty())
    throw Error(what + ": container path " + q(path) + " " + why);
  return path;
}

RecordedDevice from_device_arg(const DeviceArg& a) {
  std::string what = "device " + q(a.host);
  check_path(what, a.container);
  HostDevice h = resolve_device(a.host, "/dev", false);
  if (h.type != 'c' && h.type != 'b') throw Error(what + ": host node is a FIFO, not a character or block device");
  char buf[PATH_MAX];
  if (!::realpath(a.host.c_str(), buf)) throw_errno("resolve host device node " + q(a.host));
  struct stat st {};
  if (::stat(buf, &st) != 0) throw_errno("stat host device node " + q(buf));
  RecordedDevice d;
  d.path = a.container;
  d.host_path = buf;
  d.type = h.type;
  d.major = h.major;
  d.minor = h.minor;
  d.permissions = a.permissions;
  d.file_mode = h.mode & 0777;
  d.uid = st.st_uid;
  d.gid = st.st_gid;
  d.direct = true;
  return d;
}

// Wanted is what the arguments ask for, before it is compared with the record.
struct Wanted {
  std::vector<RecordedDevice> devices;
  std::vector<RecordedMount> mounts;
  std::vector<NotApplied> not_applied;
};

// from_cdi_node completes a CDI device node from the host as create does
// (cdi::complete_node), for a node made in a running container: a char or
// block device whose type is the host node's.
RecordedDevice from_cdi_node(const cdi::DeviceNode& n, const std::string& name, const Spec& spec) {
  std::string what = "CDI device " + q(name) + ": device node " + q(n.path);
  check_path(what, n.path);
  cdi::DeviceNode c;
  try {
    c = cdi::complete_node(n, spec);
  } catch (const Error& e) {
    throw Error("CDI device " + q(name) + ": " + e.what());
  }
  std::string host = c.host_path.empty() ? c.path : c.host_path;
  HostDevice h = lstat_device(host);
  if (h.type != 'c' && h.type != 'b') throw Error(what + ": host node " + q(host) + " is a FIFO");
  if (c.type != std::string(1, h.type))
    throw Error(what + ": host node " + q(host) + " has type " + std::string(1, h.type) + ", the spec says " + c.type);
  RecordedDevice d;
  d.path = c.path;
  d.host_path = host;
  d.type = h.type;
  d.major = c.major;
  d.minor = c.minor;
  auto perms = canonical_permissions(c.permissions.empty() ? "rwm" : c.permissions);
  if (!perms) throw Error(what + ": permissions " + q(c.permissions) + " must be a subset of rwm");
  d.permissions = *perms;
  d.file_mode = *c.file_mode & 0777;
  d.uid = c.uid.value_or(0);
  d.gid = c.gid.value_or(0);
  d.cdi = {name};
  return d;
}

void add_cdi_edits(const cdi::ContainerEdits& e, const std::string& name, const Spec& spec, Wanted& w) {
  for (const auto& n : e.device_nodes) w.devices.push_back(from_cdi_node(n, name, spec));
  for (const auto& m : e.mounts) {
    bool bind = m.type.empty() || m.type == "bind" ||
                std::find(m.options.begin(), m.options.end(), "bind") != m.options.end() ||
                std::find(m.options.begin(), m.options.end(), "rbind") != m.options.end();
    if (!bind) {
      w.not_applied.push_back({name, "mount", m.type + " at " + m.container_path});
      continue;
    }
    check_path("CDI device " + q(name) + ": mount", m.container_path);
    if (m.host_path.empty() || m.host_path[0] != '/')
      throw Error("CDI device " + q(name) + ": mount host path " + q(m.host_path) + " is not absolute");
    w.mounts.push_back({m.container_path, m.host_path, m.options, "made", true, {name}});
  }
  for (const auto& env : e.env) w.not_applied.push_back({name, "env", env});
  for (const auto& h : e.hooks) {
    std::string v = h.hook_name + " " + h.path;
    for (std::size_t i = 1; i < h.args.size(); ++i) v += " " + h.args[i];
    w.not_applied.push_back({name, "hook", v});
  }
  for (auto gid : e.additional_gids) w.not_applied.push_back({name, "additionalGids", std::to_string(gid)});
  for (const auto& n : e.net_devices)
    w.not_applied.push_back({name, "netDevice", n.host_interface_name + " as " + n.name});
  if (e.intel_rdt) w.not_applied.push_back({name, "intelRdt", e.intel_rdt->clos_id});
}

// cdi_wanted loads the requested CDI devices from the configured spec dirs.
// An unknown name fails naming every spec file that did not load, as create does.
void cdi_wanted(const Target& t, const std::vector<std::string>& names, Wanted& w) {
  auto root = t.doc.root();
  auto section = root.section("cdi");
  auto dirs = cdi::read_spec_dirs(section);
  if (!dirs) throw Error("CDI is off in " + q(t.doc.file()) + " ([cdi] enabled = false)");
  std::set<std::string> wanted;
  for (const auto& n : names) {
    std::string why;
    if (!cdi::parse_qualified_name(n, &why)) throw Error("--cdi " + q(n) + ": " + why);
    wanted.insert(n);
  }
  cdi::Registry reg = cdi::load_specs(*dirs, &wanted);
  std::vector<std::string> missing_names;
  for (const auto& n : wanted)
    if (!reg.find(n)) missing_names.push_back(n);
  if (!missing_names.empty()) throw cdi::unresolvable_error(missing_names, reg);
  for (const auto& n : names) {
    const cdi::DeviceRef* ref = reg.find(n);
    add_cdi_edits(ref->spec->edits, n, t.spec, w);
    add_cdi_edits(ref->device->edits, n, t.spec, w);
  }
}

template <typename T>
void add_refs(T& into, const T& from) {
  for (const auto& n : from.cdi)
    if (std::find(into.cdi.begin(), into.cdi.end(), n) == into.cdi.end()) into.cdi.push_back(n);
}

std::string attached_by(const RecordedDevice& d) {
  std::vector<std::string> by;
  if (d.direct) by.push_back("--device " + d.host_path);
  for (const auto& n : d.cdi) by.push_back("--cdi " + n);
  return join(by, ", ");
}

// Plan is the record after the attach and what in it is new.
struct Plan {
  Record record;
  std::vector<std::size_t> new_devices;  // indexes into record.devices
  std::vector<std::size_t> new_mounts;
};

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

// --gpu UUID names an NVIDIA GPU by its UUID: the driver's list under
// --proc maps it to /dev/nvidia<minor> (docs/attach.md, "GPUs by UUID").
void add_gpu_options(VerbCli& cli, std::vector<std::string>& gpus, std::string& proc) {
  cli.option("--gpu", gpus, "UUID of an NVIDIA GPU (nvidia-smi -L): its /dev/nvidiaN, as --device").one_value_each();
  cli.option("--proc", proc, "where the NVIDIA driver's GPU list is (<proc>/driver/nvidia/gpus)").show_default();
}

std::vector<std::string> gpu_nodes(const std::vector<std::string>& uuids, const std::string& proc) {
  if (uuids.empty()) return {};
  std::vector<nvidia::Gpu> gpus = nvidia::read_gpus(proc);
  std::vector<std::string> nodes;
  for (const auto& u : uuids) nodes.push_back(nvidia::find_gpu(gpus, u, proc).node());
  return nodes;
}

// add_dirs records the directories attach made, once each.
void add_dirs(Record& r, const std::vector<std::string>& made) {
  for (const auto& d : made)
    if (std::find(r.dirs.begin(), r.dirs.end(), d) == r.dirs.end()) r.dirs.push_back(d);
}

int fail(const char* verb, const std::exception& e) {
  std::cerr << "specshim " << verb << ": " << describe(e) << "\n";
  return 1;
}

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

std::string reason(const std::string& edit) {
  if (edit == "env") return "a running process's environment cannot change";
  if (edit == "hook") return "hooks run only at create and start";
  if (edit == "mount") return "only bind mounts can be attached";
  return "a running container's process cannot take it";
}

}  // namespace

int attach_main(const std::vector<std::string>& argv) {
  VerbCli cli("Give a running container a device: its cgroup rule, the node in its mount namespace, and a record.",
              "specshim attach");
  Common c;
  std::vector<std::string> devices, cdis;
  add_common(cli, c);
  cli.option("--device", devices, "HOST[:CONTAINER[:PERMS]]: a host char/block node; PERMS from rwm (default rwm)")
      .one_value_each();
  cli.option("--cdi", cdis, "VENDOR/CLASS=NAME: a CDI device from the configured spec dirs").one_value_each();
  std::vector<std::string> gpus;
  std::string proc = "/proc";
  add_gpu_options(cli, gpus, proc);
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  try {
    if (devices.empty() && cdis.empty() && gpus.empty()) throw Error("give at least one --device, --cdi or --gpu");
    std::vector<DeviceArg> args;
    for (const auto& d : devices) args.push_back(parse_device_arg(d));
    for (const auto& node : gpu_nodes(gpus, proc)) args.push_back(DeviceArg{node, node, "rwm"});
    Target t = open_target(c, true);
    std::string what = "container " + q(c.id);
    try {
      Wanted w;
      for (const auto& a : args) w.devices.push_back(from_device_arg(a));
      if (!cdis.empty()) cdi_wanted(t, cdis, w);
      BundleLock lock(t.state.bundle);
      auto old = read_record(t.state.bundle, t.id);
      Record before = old.value_or(Record{c.id, {}, {}, {}, {}});
      Plan p = plan(before, w);
      for (const auto& n : w.not_applied)
        std::cerr << "specshim attach: " << what << ": CDI device " << q(n.cdi) << ": " << n.edit << " " << q(n.value)
                  << " not applied (" << reason(n.edit) << ")\n";
      if (old && p.record == *old && p.new_devices.empty() && p.new_mounts.empty()) {
        std::cerr << "specshim attach: " << what << ": already attached\n";
        return 0;
      }
      apply([&](UndoStack& undo) {
        live::CgroupPlaces places = live::cgroup_places(t.state.pid);
        t.process.require_alive();  // the cgroups read are the live container process's
        std::vector<RecordedDevice> after = before.devices;
        for (auto i : p.new_devices) after.push_back(p.record.devices[i]);
        change_rules(t, places, before.devices, after, undo);
        for (auto i : p.new_devices) {
          RecordedDevice& d = p.record.devices[i];
          try {
            live::Placed placed = live::make_node(t.process, node_request(d));
            d.node = live::method_name(placed.method);
            add_dirs(p.record, placed.made_dirs);
            undo.push("remove " + q(d.path), placed.undo);
          } catch (const std::exception&) {
            std::throw_with_nested(Error("device " + q(d.host_path)));
          }
        }
        for (auto i : p.new_mounts) {
          RecordedMount& m = p.record.mounts[i];
          live::Placed placed = live::bind_mount(t.process, mount_request(m));
          m.mounted = placed.method != live::Method::existing;
          m.target = placed.made_target ? "made" : "existing";
          add_dirs(p.record, placed.made_dirs);
          undo.push("unmount " + q(m.path), placed.undo);
        }
        write_record(t, p.record);
      });
      for (auto i : p.new_devices) {
        const auto& d = p.record.devices[i];
        std::cout << "attached " << d.path << " (" << numbers(d) << " " << d.permissions << ", " << d.node << ")\n";
      }
      for (auto i : p.new_mounts) std::cout << "attached " << p.record.mounts[i].path << " (bind mount)\n";
      return 0;
    } catch (const std::exception&) {
      std::throw_with_nested(Error(what));
    }
  } catch (const std::exception& e) {
    return fail("attach", e);
  }
}

int detach_main(const std::vector<std::string>& argv) {
  VerbCli cli("Take back what `specshim attach` gave a running container: the cgroup rule, the node, the record.",
              "specshim detach");
  Common c;
  std::vector<std::string> devices, cdis;
  add_common(cli, c);
  cli.option("--device", devices, "CONTAINER-PATH of a device attached with --device").one_value_each();
  cli.option("--cdi", cdis, "VENDOR/CLASS=NAME of a device attached with --cdi").one_value_each();
  std::vector<std::string> gpus;
  std::string proc = "/proc";
  add_gpu_options(cli, gpus, proc);
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  try {
    for (const auto& node : gpu_nodes(gpus, proc)) devices.push_back(node);
    if (devices.empty() && cdis.empty()) throw Error("give at least one --device, --cdi or --gpu");
    Target t = open_target(c, true);
    std::string what = "container " + q(c.id);
    try {
      BundleLock lock(t.state.bundle);
      auto old = read_record(t.state.bundle, t.id);
      if (!old) throw Error("nothing is attached (no " + q((t.state.bundle / kRecordFile).string()) + ")");
      Record rec = *old;
      for (const auto& path : devices) {
        auto it = std::find_if(rec.devices.begin(), rec.devices.end(), [&](const auto& e) { return e.path == path; });
        if (it == rec.devices.end()) throw Error("device " + q(path) + " is not attached");
        if (!it->direct)
          throw Error("device " + q(path) + " was attached by " + attached_by(*it) + "; detach it with --cdi");
        it->direct = false;
      }
      for (const auto& name : cdis) {
        bool found = false;
        auto drop = [&](std::vector<std::string>& refs) {
          auto n = std::remove(refs.begin(), refs.end(), name);
          found = found || n != refs.end();
          refs.erase(n, refs.end());
        };
        for (auto& d : rec.devices) drop(d.cdi);
        for (auto& m : rec.mounts) drop(m.cdi);
        auto n = std::remove_if(rec.not_applied.begin(), rec.not_applied.end(),
                                [&](const NotApplied& e) { return e.cdi == name; });
        found = found || n != rec.not_applied.end();
        rec.not_applied.erase(n, rec.not_applied.end());
        if (!found) throw Error("CDI device " + q(name) + " is not attached");
      }
      std::vector<RecordedDevice> gone, kept;
      for (const auto& d : rec.devices) (d.direct || !d.cdi.empty() ? kept : gone).push_back(d);
      std::vector<RecordedMount> gone_mounts, kept_mounts;
      for (const auto& m : rec.mounts) (!m.cdi.empty() ? kept_mounts : gone_mounts).push_back(m);
      rec.devices = kept;
      rec.mounts = kept_mounts;
      apply([&](UndoStack& undo) {
        live::CgroupPlaces places = live::cgroup_places(t.state.pid);
        t.process.require_alive();  // the cgroups read are the live container process's
        change_rules(t, places, old->devices, rec.devices, undo);
        for (auto it = gone_mounts.rbegin(); it != gone_mounts.rend(); ++it) {
          if (!it->mounted) continue;
          live::remove_mount(t.process, it->path, it->target == "made");
          auto m = *it;
          live::Process pinned = t.process;
          undo.push("mount " + q(m.path) + " again", [pinned, m] { live::bind_mount(pinned, mount_request(m)); });
        }
        for (const auto& d : gone) {
          if (d.node == "existing") continue;
          live::remove_node(t.process, node_request(d));
          live::Process pinned = t.process;
          undo.push("make " + q(d.path) + " again", [pinned, d] { live::make_node(pinned, node_request(d)); });
        }
        // What is made again on undo makes its directories again.
        for (const auto& dir : live::remove_empty_dirs(t.process, rec.dirs))
          rec.dirs.erase(std::remove(rec.dirs.begin(), rec.dirs.end(), dir), rec.dirs.end());
        write_record(t, rec);
      });
      for (const auto& d : gone) std::cout << "detached " << d.path << " (" << numbers(d) << ")\n";
      for (const auto& m : gone_mounts) std::cout << "detached " << m.path << " (bind mount)\n";
      return 0;
    } catch (const std::exception&) {
      std::throw_with_nested(Error(what));
    }
  } catch (const std::exception& e) {
    return fail("detach", e);
  }
}

int attached_main(const std::vector<std::string>& argv) {
  VerbCli cli("Show what `specshim attach` gave a container (its record).", "specshim attached");
  Common c;
  std::string format = "text";
  add_common(cli, c);
  cli.option("--format", format, "text: a table; json: the record (schema: docs/attach.md)")
      .one_of({"text", "json"})
      .show_default();
  if (int rc = cli.parse(argv); rc >= 0) return rc;
  try {
    Target t = open_target(c, false);
    try {
      Record r = read_record(t.state.bundle, t.id).value_or(Record{c.id, {}, {}, {}, {}});
      if (format == "json") {
        std::cout << record_json(r);
        return 0;
      }
      if (r.devices.empty() && r.mounts.empty() && r.not_applied.empty()) {
        std::cout << "container " << c.id << ": nothing attached\n";
        return 0;
      }
      std::vector<std::vector<std::string>> rows = {{"PATH", "DEVICE", "PERMS", "NODE", "HOST", "BY"}};
      for (const auto& d : r.devices)
        rows.push_back({d.path, numbers(d), d.permissions, d.node, d.host_path, attached_by(d)});
      for (const auto& m : r.mounts) {
        std::vector<std::string> by;
        for (const auto& n : m.cdi) by.push_back("--cdi " + n);
        rows.push_back(
            {m.path, "bind", join(m.options, ","), m.mounted ? "bind" : "existing", m.host_path, join(by, ", ")});
      }
      std::vector<std::size_t> width(rows[0].size(), 0);
      for (const auto& row : rows)
        for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
      for (const auto& row : rows) {
        std::string line;
        for (std::size_t i = 0; i < row.size(); ++i)
          line += row[i] + (i + 1 < row.size() ? std::string(width[i] - row[i].size() + 2, ' ') : "");
        std::cout << line << "\n";
      }
      for (const auto& n : r.not_applied)
        std::cout << "not applied: " << n.cdi << ": " << n.edit << " " << n.value << " (" << reason(n.edit) << ")\n";
      return 0;
    } catch (const std::exception&) {
      std::throw_with_nested(Error("container " + q(c.id)));
    }
  } catch (const std::exception& e) {
    return fail("attached", e);
  }
}

}  // namespace specshim::shim
