// SPDX-License-Identifier: Apache-2.0
// The hot-plug layer: what `specshim attach` recorded is still true: each
// device's node (or bind mount) and its cgroup rule, each mount.
#include "diagnose/diagnose.h"

namespace specshim::shim::diagnose {

void check_hotplug(const Container& c, Report& r) {
  if (!c.record) {
    r.add(kHotplug, "record", Severity::info, "nothing attached (no " + std::string(live::attach::kRecordFile) + ")");
    return;
  }
  if (c.record->devices.empty() && c.record->mounts.empty()) {
    r.add(kHotplug, "record", Severity::info, "nothing attached (everything was detached)");
    return;
  }
  for (const auto& a : c.record->devices) {
    Device d;
    d.path = a.path;
    d.type = a.type;
    d.major = a.major;
    d.minor = a.minor;
    d.numbers_known = true;
    d.host_path = a.host_path;
    d.access = open_access(a.permissions);
    d.source = "attach";
    d.bind = a.node == "bind";
    d.remedy = "`specshim detach " + c.id + " --device " + a.path + "`, then attach it again";
    check_node(c, d, r, kHotplug);
    check_cgroup(c, d, r, kHotplug);
  }
  for (const auto& m : c.record->mounts) {
    if (c.mount_at(m.path))
      r.add(kHotplug, m.path, Severity::ok, "bind mount of " + m.host_path + " (attach)");
    else
      r.add(kHotplug, m.path, Severity::fail, "attach bind-mounted " + m.host_path + " here; no mount is there now",
            "something unmounted it: `specshim detach --cdi` and attach again");
  }
}

}  // namespace specshim::shim::diagnose
