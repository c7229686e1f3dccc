// SPDX-License-Identifier: Apache-2.0
// Telling systemd about a unit's devices: DeviceAllow= values for a rule
// list, the systemctl command that sets them for the running unit, and
// whether systemd is there at all.
#include <sys/stat.h>

#include "specshim/live/cgroup_devices.h"

namespace specshim::live {
namespace {

// value is one DeviceAllow= entry, or "" when systemd has no syntax for it
// (systemd.resource-control(5): a /dev path, or char-/block- followed by a
// /proc/devices group name, a major (systemd >= 240) or a glob).
std::string value(const DeviceRule& r) {
  std::string kind = r.type == 'c' ? "char" : "block";
  if (!r.major) return r.minor ? "" : kind + "-* " + r.access;
  if (!r.minor) return kind + "-" + std::to_string(*r.major) + " " + r.access;
  return "/dev/" + kind + "/" + std::to_string(*r.major) + ":" + std::to_string(*r.minor) + " " + r.access;
}

}  // namespace

std::vector<std::string> SystemdRequest::systemctl_argv() const {
  std::vector<std::string> argv = {"systemctl", "set-property", "--runtime", "--", unit};
  for (const auto& v : values) argv.push_back("DeviceAllow=" + v);
  return argv;
}

SystemdRequest systemd_device_allow(const std::string& unit, const std::vector<DeviceRule>& rules) {
  Reduced reduced = reduce(rules);
  SystemdRequest req{unit, {""}, {}};
  if (reduced.default_allow) {
    if (reduced.exceptions.empty()) {
      req.values.push_back("char-* rwm");
      req.values.push_back("block-* rwm");
    } else {
      for (const auto& e : reduced.exceptions) req.unsupported.push_back("deny " + str(e));
    }
    return req;
  }
  for (const auto& e : reduced.exceptions) {
    std::string v = value(e);
    if (v.empty())
      req.unsupported.push_back("allow " + str(e));
    else
      req.values.push_back(v);
  }
  return req;
}

bool systemd_is_pid1(const std::filesystem::path& root) {
  struct stat st {};
  return ::lstat((root / "run/systemd/system").c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace specshim::live
