// SPDX-License-Identifier: Apache-2.0
// Doctor's capability check: can the runtime, started from here, create
// device nodes and grant what the requirements rules ask for.
#include <sstream>

#include "doctor/doctor.h"
#include "specshim/base/caps.h"
#include "specshim/base/fs.h"

namespace specshim::shim::doctor {
namespace {

std::string limit_text(std::uint64_t v) {
  return v == requirements::kUnlimited ? "unlimited" : std::to_string(v);
}

// initial_userns tells from uid_map whether this process sees all uids as
// themselves, which only the initial user namespace does.
void check_userns(const Host& host, Check& c) {
  std::filesystem::path uid_map = host.path("/proc/self/uid_map");
  std::string text;
  try {
    text = fs::read_regular_file(uid_map, 1 << 16);
  } catch (const std::exception& e) {
    c.add(Severity::warn, "cannot read " + uid_map.string() + ": " + e.what());
    return;
  }
  std::istringstream s(text);
  std::uint64_t inside = 1, outside = 1, count = 0;
  s >> inside >> outside >> count;
  std::string more;
  if (inside == 0 && outside == 0 && count == 4294967295ULL && !(s >> more)) {
    c.add(Severity::ok, "initial user namespace");
    return;
  }
  // Ref: user_namespaces(7): mknod of a device needs CAP_MKNOD in the initial namespace.
  std::string first = std::to_string(inside) + " " + std::to_string(outside) + " " + std::to_string(count);
  c.add(Severity::fail, "in a user namespace (uid_map `" + first + (more.empty() ? "" : " ...") +
                            "`): the runtime cannot create device nodes (rootless)");
}

void check_own(Check& c, const char* cap, Severity missing, const std::string& why) {
  caps::Own own = caps::own(cap);
  if (own.effective)
    c.add(Severity::ok, std::string(cap) + ": effective");
  else
    c.add(missing,
          std::string(cap) + ": not effective" + (own.bounding ? "" : " (not in the bounding set)") + ": " + why);
}

// check_rules warns about rule additions the runtime cannot make from here:
// a capability outside the bounding set, or a hard rlimit above this
// process's without CAP_SYS_RESOURCE (runc's setrlimit fails with EPERM).
void check_rules(const Loaded& loaded, Check& c) {
  bool sys_resource = caps::own("CAP_SYS_RESOURCE").effective;
  for (const auto& rule : loaded.rules) {
    for (const auto& cap : rule.capabilities)
      if (!caps::own(cap).bounding)
        c.add(Severity::warn, "rule `" + rule.name + "` adds " + cap + ", which is not in specshim's bounding set");
    for (const auto& limit : rule.rlimits) {
      auto [soft, hard] = requirements::own_limit(limit.type);
      if (limit.hard > hard && !sys_resource)
        c.add(Severity::warn, "rule `" + rule.name + "` raises the " + limit.type + " hard limit to " +
                                  limit_text(limit.hard) + ", above this process's " + limit_text(hard) +
                                  ", without CAP_SYS_RESOURCE: matched containers would fail to start");
    }
  }
}

}  // namespace

Check check_capabilities(const Host& host, const Loaded& loaded) {
  Check c("capabilities");
  check_userns(host, c);
  check_own(c, "CAP_MKNOD", Severity::fail, "the runtime cannot create device nodes");
  check_own(c, "CAP_SYS_RESOURCE", Severity::info, "rlimits can only be raised up to this process's hard limits");
  check_rules(loaded, c);
  return c;
}

}  // namespace specshim::shim::doctor
