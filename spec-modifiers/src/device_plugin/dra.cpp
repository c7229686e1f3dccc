// SPDX-License-Identifier: Apache-2.0
#include "device_plugin/dra.h"

#include <algorithm>
#include <set>

#include "kubelet_modifier.h"
#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/node/cdi.h"

namespace specshim::device_plugin {
namespace {

[[noreturn]] void fail(const Target& t, const std::string& what, const std::string& cause) {
  throw Error(what + " for " + t.who + " (socket " + t.pod_resources_socket() + "): " + cause);
}

// gather lists (CDI name, where it came from) for the sources: the
// container specshim.io/devices-from names (from), every container the
// kubelet lists (all), drivers filtered; in container order, each name
// once. A malformed name fails here, before the spec is touched.
std::vector<std::pair<std::string, std::string>> gather(const Target& t, const std::optional<std::string>& from,
                                                        bool all) {
  const auto& id = t.id;
  std::string what = from ? "read the DRA claims of container `" + *from + "` (annotation " + kDevicesFrom + ")"
                          : "read the DRA claims of pod `" + id.pod.str() + "` (annotation " + kDevicesFromPod + ")";
  if (from && !container_name(*from)) fail(t, what, "not a container name");
  const kubelet::PodResources* pr = nullptr;
  try {
    if (id.pod.empty()) throw kubelet::NotFound(std::string("no pod is known: set annotation ") + kPod);
    pr = &t.pod();
    if (from && !pr->containers.count(*from))
      throw kubelet::NotFound("pod `" + id.pod.str() + "` has no container `" + *from + "`");
  } catch (const kubelet::Error& e) {
    fail(t, what, e.what());
  }
  std::vector<std::string> sources;
  if (from) sources.push_back(*from);
  if (all)
    for (const auto& [name, devices] : pr->containers)
      if (std::find(sources.begin(), sources.end(), name) == sources.end()) sources.push_back(name);

  // A CRI container's own claims (by namespace/name) are containerd's business.
  std::set<std::string> own;
  if (id.cri && !id.container.empty())
    for (const auto& claim : pr->assignment(id.container).dynamic_resources)
      own.insert(claim.claim_namespace + "/" + claim.claim_name);

  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& source : sources) {
    for (const auto& claim : pr->assignment(source).dynamic_resources) {
      std::string ref = claim.claim_namespace + "/" + claim.claim_name;
      if (own.count(ref)) {
        log::debug("device-plugin: DRA claim `{}` of container `{}`: {} holds it already", ref, source, t.who);
        continue;
      }
      for (const auto& res : claim.claim_resources) {
        std::string origin = "DRA claim `" + ref + "` of container `" + source + "`, driver `" + res.driver_name +
                             "`, device `" + res.pool_name + "/" + res.device_name + "`";
        if (!t.config.dra.follows(res.driver_name)) {
          log::debug("device-plugin: {}: driver not in [device-plugin.dra] drivers, left out", origin);
          continue;
        }
        if (res.cdi_devices.empty()) log::debug("device-plugin: {}: the driver named no CDI device", origin);
        for (const auto& name : res.cdi_devices) {
          std::string why;
          if (name.find(',') != std::string::npos || !cdi::parse_qualified_name(name, &why))
            fail(t, what, origin + ": invalid CDI device name `" + name + "`" + (why.empty() ? "" : ": " + why));
          bool seen = std::any_of(out.begin(), out.end(), [&](auto& o) { return o.first == name; });
          if (!seen) out.emplace_back(name, origin);
        }
      }
    }
  }
  if (out.empty()) log::debug("device-plugin: {}: no DRA claim to hand over for {}", what, t.who);
  return out;
}

}  // namespace

std::string DraHandOver::hand_over(const Target& t, Spec& spec, Context& ctx) {
  if (!t.config.dra.enabled) return {};
  auto from = spec.annotation(kDevicesFrom);
  auto pod_sync = spec.annotation(kDevicesFromPod);
  if (pod_sync && *pod_sync != "true" && *pod_sync != "false")
    fail(t, std::string("read the DRA claims of pod `") + t.id.pod.str() + "` (annotation " + kDevicesFromPod + ")",
         "want \"true\" or \"false\"");
  bool all = pod_sync && *pod_sync == "true";
  if (!from && !all) return {};
  std::string asked = from.value_or("") + "\n" + (all ? "pod-sync" : "");
  if (asked_ != asked) {
    names_ = gather(t, from, all);
    asked_ = asked;
  }
  std::vector<std::string> names;
  for (const auto& [name, origin] : names_) {
    names.push_back(name);
    ctx.cdi_origins.emplace(name, origin);
    // A claim handed over is the sibling's grant, as a merged answer is.
    Grant claim{.resource = "", .source = origin, .cdi_devices = {name}, .claim = true};
    if (std::find(ctx.grants.begin(), ctx.grants.end(), claim) == ctx.grants.end())
      ctx.grants.push_back(std::move(claim));
  }
  if (!merge_list_annotation(spec, kCdiDevices, names)) return {};
  for (const auto& [name, origin] : names_)
    log::debug("device-plugin: CDI device {} for {}: from {}", name, t.who, origin);
  return "handed over CDI devices " + join(names, ",") + " of DRA claims";
}

}  // namespace specshim::device_plugin
