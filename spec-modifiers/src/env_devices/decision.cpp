// SPDX-License-Identifier: Apache-2.0
#include "env_devices/decision.h"

#include <algorithm>

#include "env_devices/grant.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/text.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/node/cdi.h"
#include "specshim/node/grant.h"

namespace specshim::env_devices {
namespace {

// sibling tells a container created outside CRI that belongs to a pod: it
// names one, or asks for a pod's devices. Without a grant it gets nothing,
// never the outside-kubernetes policy's `honour`.
bool sibling(const Spec& spec) {
  return spec.annotation(device_plugin::kPod) || spec.annotation(device_plugin::kDevicesFrom) ||
         spec.annotation(device_plugin::kDevicesFromPod);
}

// own_grants are the container's checkpoint answers (the session reads
// them once per create, for device-plugin too).
std::vector<Grant> own_grants(const Entry& e, KubeletSession& session, const pod_identity::Identity& id,
                              const std::string& target) {
  std::vector<Grant> grants;
  if (!id.cri || id.uid.empty() || id.container.empty()) return grants;
  try {
    for (const auto& entry : session.checkpoint(id.uid, id.container))
      if (entry.alloc) grants.push_back(specshim::granted(*entry.alloc, entry.resource, "the checkpoint"));
  } catch (const kubelet::Error& err) {
    throw Error("read the devices the kubelet granted " + target + " from " +
                kubelet::checkpoint_file(e.kubelet_root).string() + ": " + err.what());
  }
  return grants;
}

}  // namespace

std::optional<DeviceRequest> decide(const Entry& e, KubeletSession& session, const Spec& spec, const Context& ctx,
                                    const pod_identity::Identity& id, const std::string& target, std::string& ignored) {
  DeviceList list;
  std::string origin;
  std::vector<std::string> from_mounts;
  if (!e.volume_mounts.empty()) from_mounts = mounted(spec, e.volume_mounts);
  std::optional<std::string> value = value_of(e.grammar, spec, e.env);
  if (!from_mounts.empty()) {
    list = {DeviceList::What::names, from_mounts};
    origin = "/dev/null mounts below " + e.volume_mounts + " of " + target;
  } else {
    if (!value || (!e.volume_mounts.empty() && fs::clean_path(*value) == e.volume_mounts)) return std::nullopt;
    origin = "env " + e.env + "=" + shown(*value) + " of " + target;
    try {
      list = parse_list(e.grammar, *value);
    } catch (const Error& err) {
      throw Error(origin + ": " + err.what());
    }
  }
  if (list.what == DeviceList::What::nothing) return std::nullopt;

  DeviceRequest req{.from = "env-devices", .origin = origin, .kind = e.kind};
  req.scope = list.what == DeviceList::What::all    ? DeviceRequest::Scope::all
              : list.what == DeviceList::What::none ? DeviceRequest::Scope::none
                                                    : DeviceRequest::Scope::names;
  for (const auto& item : list.names) {
    std::string why;
    std::string name = qualify(e.kind, item, &why);
    if (name.empty()) throw Error(origin + ": " + cdi::quote(item) + " is not a CDI device name: " + why);
    if (std::find(req.names.begin(), req.names.end(), name) == req.names.end()) req.names.push_back(name);
  }

  req.visible = e.scope == Scope::visible;

  // Whom to trust with a request of their own. Only CRI's identity can
  // make a container trusted: a sibling's pod and capabilities are
  // written by whoever creates it.
  if (id.cri && e.privileged == Trust::honour && pod_identity::privileged(spec)) return req;
  if (id.cri &&
      std::find(e.trusted_namespaces.begin(), e.trusted_namespaces.end(), id.pod.ns) != e.trusted_namespaces.end())
    return req;

  // The grant: the container's own checkpoint answers, and what
  // device-plugin handed it in memory (a sibling's source's answers and
  // DRA claims). A container with a grant is judged by it, whatever it
  // is and whatever its annotations say.
  DeviceRequest::Granted bound{.clamp = e.on_excess == OnExcess::clamp};
  std::vector<std::string> by;
  auto take = [&](const Grant& g) {
    if (!g.claim && !e.counts(g.resource)) return;
    Granted granted = grant_of(e, g);
    if (granted.names.empty() && !granted.all) return;
    bound.all = bound.all || granted.all;
    for (auto& n : granted.names) add_name(bound.names, std::move(n));
    std::string one = g.claim ? g.source : "`" + g.resource + "` (" + g.source + ")";
    if (std::find(by.begin(), by.end(), one) == by.end()) by.push_back(one);
  };
  for (const auto& g : own_grants(e, session, id, target)) take(g);
  for (const auto& g : ctx.grants) take(g);
  bool granted = !bound.names.empty() || bound.all;
  if (!granted) {
    if (!id.cri && !sibling(spec)) {
      if (e.outside_kubernetes == Outside::honour) return req;
      ignored = origin + ": the container was not created through CRI (outside-kubernetes = \"ignore\")";
      return std::nullopt;
    }
    ignored = origin + ": " + (id.cri ? "the kubelet granted " : "nothing was handed over from its pod to ") + target +
              " no device of " + join(e.resources, ", ");
    return std::nullopt;
  }

  // Everyone else gets what was granted, at most.
  std::vector<std::string> names = bound.names;
  if (bound.all) names.insert(names.begin(), e.kind + "=all");
  bound.what = (id.cri ? "the kubelet granted " : "the kubelet granted its source ") + join_some(names, ", ") + " by " +
               join(by, ", ");
  req.granted = std::move(bound);
  return req;
}

bool asks(const Entry& e, const Spec& spec) {
  if (!e.volume_mounts.empty() && !mounted(spec, e.volume_mounts).empty()) return true;
  auto value = value_of(e.grammar, spec, e.env);
  if (!value) return false;
  try {
    return parse_list(e.grammar, *value).what != DeviceList::What::nothing;
  } catch (const Error&) {
    return true;
  }
}

}  // namespace specshim::env_devices
