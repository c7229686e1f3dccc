// SPDX-License-Identifier: Apache-2.0
// Doctor's hot-plug check: can `specshim attach` change a running
// container's devices here (docs/attach.md): which cgroup files or programs
// it changes, whether the kernel takes its device program, the capabilities
// for mknod and for entering a mount namespace, and whether systemd owns
// container cgroups (containerd's handlers with SystemdCgroup = true: then
// DeviceAllow= is set too, with systemctl). Problems are warnings:
// hot-plug is optional, a node that does not use it is healthy.
#include "specshim/node/hotplug.h"

#include "doctor/doctor.h"
#include "specshim/base/caps.h"
#include "specshim/base/fs.h"
#include "specshim/live/cgroup_devices.h"

namespace specshim::shim::doctor {
namespace {

struct Layout {
  std::string unified;  // cgroup2 mount point, "" when none
  std::string devices;  // v1 devices controller mount point, "" when none
  bool v1 = false;      // any v1 hierarchy
};

Layout layout(const std::string& mountinfo) {
  Layout l;
  for (const auto& m : live::parse_mountinfo(mountinfo)) {
    if (m.fstype == "cgroup2" && l.unified.empty()) l.unified = m.point;
    if (m.fstype != "cgroup") continue;
    l.v1 = true;
    if (m.has_option("devices") && l.devices.empty()) l.devices = m.point;
  }
  return l;
}

// check_mode says what attach changes on this layout; returns whether a
// device program may be needed (cgroup2 present).
bool check_mode(const Host& host, Check& c) {
  std::filesystem::path mountinfo = host.path("/proc/self/mountinfo");
  Layout l;
  try {
    l = layout(fs::read_regular_file(mountinfo, 4 << 20));
  } catch (const std::exception& e) {
    c.add(Severity::warn, "cannot read " + mountinfo.string() + ": " + e.what());
    return false;
  }
  if (!l.v1 && !l.unified.empty()) {
    c.add(Severity::ok, "cgroup v2 at " + l.unified + ": attach replaces the container's device program");
    return true;
  }
  if (l.devices.empty()) {
    c.add(Severity::warn, l.unified.empty()
                              ? "no cgroup devices controller and no cgroup2: attach cannot grant a device"
                              : "cgroup v1 without the devices controller (cgroup2 at " + l.unified +
                                    "): attach can only replace device programs there");
    return !l.unified.empty();
  }
  if (l.unified.empty()) {
    c.add(Severity::ok, "cgroup v1: attach writes devices.allow under " + l.devices);
    return false;
  }
  c.add(Severity::ok, "cgroup v1 hybrid: attach writes devices.allow under " + l.devices +
                          ", and replaces a device program on the container's cgroup under " + l.unified +
                          " when one is attached");
  return true;
}

void check_bpf(bool needed, Check& c) {
  std::string why = live::device_program_loads();
  if (why.empty())
    c.add(Severity::ok, "bpf(2): specshim's device program for runc's default rules loads");
  else
    c.add(needed ? Severity::warn : Severity::info,
          "bpf(2): " + why + (needed ? ": attach cannot replace device programs" : " (not needed without cgroup2)"));
}

void check_cap(Check& c, const char* cap, const std::string& for_what) {
  caps::Own own = caps::own(cap);
  if (own.effective)
    c.add(Severity::ok, std::string(cap) + ": effective (" + for_what + ")");
  else
    c.add(Severity::warn, std::string(cap) + ": not effective" + (own.bounding ? "" : " (not in the bounding set)") +
                              ": attach cannot " + for_what);
}

// check_systemd says whether attached devices survive a `systemctl
// daemon-reload`. Under systemd as PID 1, a handler with SystemdCgroup =
// true makes each container's cgroup a .scope: a reload rewrites its device
// rules from the unit's DeviceAllow=, which attach sets with systemctl. A
// handler on cgroupfs makes cgroups no unit owns, which a reload leaves alone.
void check_systemd(const Host& host, const Loaded& loaded, const HandlerCgroups& handlers, Check& c) {
  if (!live::systemd_is_pid1(host.root)) {
    c.add(Severity::info, "systemd is not PID 1 (no " + host.path("/run/systemd/system").string() +
                              "): no unit owns container cgroups, nothing to tell systemd");
    return;
  }
  std::error_code ec;
  for (const char* p : {"/usr/bin/systemctl", "/bin/systemctl"})
    if (std::filesystem::exists(host.path(p), ec)) {
      c.add(Severity::ok, std::string("systemd is PID 1: for a container cgroup in a .scope, attach also sets "
                                      "DeviceAllow= with `") +
                              p + " set-property --runtime` (so a daemon-reload keeps the device)");
      return;
    }
  std::vector<std::string> scopes, plain;
  for (const auto& h : handlers) (h.systemd ? scopes : plain).push_back("handler `" + h.handler + "`: " + h.at);
  Severity bad = loaded.hotplug.enabled ? Severity::warn : Severity::info;
  std::string off = loaded.hotplug.enabled ? "" : " ([hotplug] enabled = false: for an attach by hand)";
  std::string lost =
      "attach cannot set DeviceAllow=, a daemon-reload would take attached devices away from "
      "containers in a .scope" +
      off;
  if (!scopes.empty()) {
    c.add(bad, "systemd is PID 1 and container cgroups are systemd scopes (" + join(scopes, "; ") +
                   "), but systemctl is not in /usr/bin or /bin: " + lost);
  } else if (!plain.empty()) {
    c.add(Severity::ok, "systemd is PID 1, but container cgroups are no systemd units (" + join(plain, "; ") +
                            "): a daemon-reload leaves their devices alone, attach needs no systemctl (none in "
                            "/usr/bin or /bin)");
  } else {
    c.add(bad,
          "systemd is PID 1 but systemctl is not in /usr/bin or /bin, and no containerd handler runs this "
          "binary to tell whether container cgroups are systemd scopes: " +
              lost);
  }
}

// check_desired reads the desired-state file as reconcile would. Absent is
// fine (nothing is wanted); malformed is a warning: reconcile changes nothing
// and the hotplug modifier gives nothing until it is fixed.
void check_desired(const Host& host, const Loaded& loaded, Check& c) {
  const std::string& file = loaded.hotplug.desired;
  std::string modifier = loaded.on("hotplug") ? "the hotplug modifier gives" : "the hotplug modifier (off) would give";
  try {
    auto d = hotplug::read_desired(host.path(file));
    if (!d) {
      c.add(Severity::info, "desired-state file " + file + ": absent (reconcile has nothing to attach; " + modifier +
                                " nothing at create)");
      return;
    }
    c.add(Severity::ok, "desired-state file " + file + ": " + std::to_string(d->entries.size()) + " entries, valid");
  } catch (const std::exception& e) {
    c.add(Severity::warn, describe(e) + ": reconcile changes nothing and " + modifier + " nothing until it is fixed");
  }
}

}  // namespace

Check check_hotplug(const Host& host, const Loaded& loaded, const HandlerCgroups& handlers) {
  Check c("hotplug");
  check_desired(host, loaded, c);
  bool needs_bpf = check_mode(host, c);
  check_bpf(needs_bpf, c);
  check_cap(c, "CAP_MKNOD", "create device nodes in a container");
  check_cap(c, "CAP_SYS_ADMIN", "enter a container's mount namespace with setns, bind-mount");
  check_systemd(host, loaded, handlers, c);
  return c;
}

}  // namespace specshim::shim::doctor
