// SPDX-License-Identifier: Apache-2.0
// The [hotplug] table (specshim/node/hotplug.h).
#include "specshim/base/error.h"
#include "specshim/node/hotplug.h"

namespace specshim::hotplug {

bool kubelet_configured(config::Section& root) {
  auto on = [&](std::string_view table) {
    auto t = root.table(table);
    return t && t->kind("enabled") == config::Kind::boolean && t->boolean("enabled") == true;
  };
  auto kubelet = root.table("kubelet");
  return (kubelet && kubelet->has("root")) || on("device-plugin") || on("cpuset") || root.has("env-devices");
}

Config read_config(config::Section& s, bool kubelet) {
  Config c;
  c.bound = kubelet ? Bound::pod_allocation : Bound::none;
  c.enabled = s.boolean("enabled").value_or(false);
  c.desired = s.string("desired").value_or(kDefaultDesired);
  c.proc = s.string("proc").value_or("/proc");
  c.docker_root = s.string("docker-root").value_or(docker::kDefaultDataRoot);
  if (auto b = s.string("bound")) {
    if (*b == "pod-allocation")
      c.bound = Bound::pod_allocation;
    else if (*b == "none")
      c.bound = Bound::none;
    else
      s.fail("bound", "must be \"none\" or \"pod-allocation\", got `" + *b + "`");
  }
  for (auto [key, value] : {std::pair{"desired", &c.desired}, {"proc", &c.proc}, {"docker-root", &c.docker_root}})
    if (value->empty() || (*value)[0] != '/') s.fail(key, "must be an absolute path");
  return c;
}

}  // namespace specshim::hotplug
