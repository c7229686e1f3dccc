// SPDX-License-Identifier: Apache-2.0
#include "device_plugin/requests.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "kubelet_modifier.h"
#include "specshim/base/error.h"

namespace specshim::device_plugin {
namespace {

void add_held(const Target& t, std::vector<Request>& out, Provider p, const std::string& holder,
              const kubelet::ResourceDevices& held) {
  for (const auto& r : t.config.resources)
    if (auto it = held.find(r.name); it != held.end() && r.has(p) && !it->second.empty())
      out.push_back({.resource = &r, .provider = p, .ids = it->second, .holder = holder});
}

// kubelet: the container's own allocation. The checkpoint has it without
// any RPC (the usual path); PodResources is asked only when the pod UID is
// unknown or the checkpoint file is missing.
void kubelet_requests(const Target& t, std::vector<Request>& out) {
  auto involved = t.with(Provider::kubelet);
  const auto& id = t.id;
  if (involved.empty() || !id.cri || id.container.empty()) return;
  std::string source = kubelet::checkpoint_file(t.config.kubelet_root).string();
  try {
    if (!id.uid.empty()) {
      const auto& entries = t.session.checkpoint(id.uid, id.container);
      std::error_code ec;
      if (!entries.empty() || std::filesystem::exists(source, ec)) {
        for (const auto& r : t.config.resources)
          for (auto& e : entries)
            if (e.resource == r.name && r.has(Provider::kubelet) && !e.device_ids.empty())
              out.push_back({.resource = &r,
                             .provider = Provider::kubelet,
                             .ids = e.device_ids,
                             .holder = id.container,
                             .stored = e.alloc});
        return;
      }
    }
    if (id.pod.empty()) return;
    source = t.pod_resources_socket();
    const auto& containers = t.pod().containers;
    if (auto c = containers.find(id.container); c != containers.end())
      add_held(t, out, Provider::kubelet, c->first, c->second);
  } catch (const kubelet::Error& e) {
    t.settle(involved, "read the devices the kubelet assigned", source, e.what());
  }
}

// container-sync: the devices of another container of the pod.
void container_sync_requests(const Target& t, const Spec& spec, std::vector<Request>& out) {
  auto involved = t.with(Provider::container_sync);
  if (involved.empty() || !spec.annotation(kDevicesFrom)) return;
  std::string from = *spec.annotation(kDevicesFrom);
  std::string what = std::string("read the devices of container `") + from + "` (annotation " + kDevicesFrom + ")";
  if (!container_name(from)) return t.settle(involved, what, t.pod_resources_socket(), "not a container name");
  try {
    if (t.id.pod.empty()) throw kubelet::NotFound(std::string("no pod is known: set annotation ") + kPod);
    const auto& containers = t.pod().containers;
    auto c = containers.find(from);
    if (c == containers.end())
      throw kubelet::NotFound("pod `" + t.id.pod.str() + "` has no container `" + from + "` with devices");
    add_held(t, out, Provider::container_sync, from, c->second);
  } catch (const kubelet::Error& e) {
    t.settle(involved, what, t.pod_resources_socket(), e.what());
  }
}

// pod-sync: every device of every container of the pod. A resource held by
// several containers is asked for as one set (one coherent answer); when
// no stored answer covers the set and Allocate is not allowed, each
// container's own answer is merged instead (parts).
void pod_sync_requests(const Target& t, const Spec& spec, std::vector<Request>& out) {
  auto involved = t.with(Provider::pod_sync);
  auto value = spec.annotation(kDevicesFromPod);
  if (involved.empty() || !value || *value == "false") return;
  std::string what =
      std::string("read the devices of pod `") + t.id.pod.str() + "` (annotation " + kDevicesFromPod + ")";
  if (*value != "true") return t.settle(involved, what, t.pod_resources_socket(), "want \"true\" or \"false\"");
  try {
    if (t.id.pod.empty()) throw kubelet::NotFound(std::string("no pod is known: set annotation ") + kPod);
    const auto& containers = t.pod().containers;
    for (const auto& r : t.config.resources) {
      if (!r.has(Provider::pod_sync)) continue;
      Request all{.resource = &r, .provider = Provider::pod_sync};
      for (const auto& [name, held] : containers) {
        auto it = held.find(r.name);
        if (it == held.end() || it->second.empty()) continue;
        for (const auto& d : it->second)
          if (std::find(all.ids.begin(), all.ids.end(), d) == all.ids.end()) all.ids.push_back(d);
        all.parts.push_back({.resource = &r, .provider = Provider::pod_sync, .ids = it->second, .holder = name});
      }
      if (all.parts.size() == 1) out.push_back(std::move(all.parts.front()));
      if (all.parts.size() > 1) out.push_back(std::move(all));
    }
  } catch (const kubelet::Error& e) {
    t.settle(involved, what, t.pod_resources_socket(), e.what());
  }
}

// held_by_pod checks a tenant's direct request against the devices the pod
// holds, and finds the container that holds all of them. Throws
// kubelet::Error naming the devices the pod does not hold.
void held_by_pod(const Target& t, const Resource& r, Request& req) {
  if (t.id.pod.empty()) throw kubelet::NotFound("no pod is known to check the devices against");
  std::set<std::string> held;
  for (const auto& [name, devices] : t.pod().containers)
    if (auto it = devices.find(r.name); it != devices.end()) {
      held.insert(it->second.begin(), it->second.end());
      if (std::all_of(req.ids.begin(), req.ids.end(),
                      [&](auto& d) { return std::find(it->second.begin(), it->second.end(), d) != it->second.end(); }))
        req.holder = name;
    }
  std::vector<std::string> foreign;
  for (const auto& d : req.ids)
    if (!held.count(d)) foreign.push_back(d);
  if (!foreign.empty())
    throw kubelet::NotFound("names devices " + join_some(foreign, ",") + " that pod `" + t.id.pod.str() +
                            "` does not hold (direct-requires-pod-devices = true)");
}

}  // namespace

std::vector<Request> provided_requests(const Target& t, const Spec& spec) {
  std::vector<Request> requests;
  kubelet_requests(t, requests);
  container_sync_requests(t, spec, requests);
  pod_sync_requests(t, spec, requests);
  return requests;
}

std::optional<Request> direct_request(const Target& t, const Resource& r, const std::string& value,
                                      const Via* vouched) {
  std::string what = "resolve annotation `" + r.name + "`";
  Request req{.resource = &r, .provider = Provider::direct};
  try {
    req.ids = parse_device_ids(r.name, value);
  } catch (const Error& e) {
    t.settle({&r}, what, t.socket_of(r), e.what());
    return std::nullopt;
  }
  if (req.ids.empty()) return std::nullopt;
  if (vouched) {
    req.via = *vouched;
    const auto& seen = req.via.resources;
    if (std::find(seen.begin(), seen.end(), r.name) != seen.end()) {
      t.settle({&r}, "resolve " + label(r.name, req.ids), t.socket_of(r),
               "reference cycle, the chain cannot converge: " + join_some(req.via.labels, " → ") + " → " +
                   label(r.name, req.ids));
      return std::nullopt;
    }
    return req;
  }
  if (!t.config.direct_requires_pod_devices) return req;
  try {
    held_by_pod(t, r, req);
  } catch (const kubelet::Error& e) {
    t.settle({&r}, what, t.pod_resources_socket(), e.what());
    return std::nullopt;
  }
  return req;
}

}  // namespace specshim::device_plugin
