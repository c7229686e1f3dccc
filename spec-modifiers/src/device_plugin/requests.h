// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier's providers: which (resource, device IDs) a
// container asks for. kubelet: its own allocation; container-sync: another
// container's (specshim.io/devices-from); pod-sync: the whole pod's
// (specshim.io/devices-from-pod); direct: an annotation named after the
// resource, holding a JSON list of IDs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "device_plugin/target.h"
#include "specshim/base/spec.h"
#include "specshim/kubelet/client.h"
#include "specshim/modifiers/device_plugin.h"

namespace specshim::device_plugin {

// Via is the chain of requests whose answers named a request, oldest first:
// a spot plugin's answer naming a real GPU.
struct Via {
  std::vector<std::string> labels = {};     // label() of each
  std::vector<std::string> resources = {};  // their resources
};

// Request is one (resource, device IDs) a provider asks for.
struct Request {
  const Resource* resource = nullptr;
  Provider provider = Provider::kubelet;
  std::vector<std::string> ids = {};
  std::string holder = {};                               // container known to hold the IDs; empty: unknown
  std::optional<kubelet::AllocateResponse> stored = {};  // the answer, when the provider found it already
  Via via = {};                                          // whose answers named this one
  std::vector<Request> parts = {};                       // pod-sync over several containers: one per container
};

// provided_requests lists what the kubelet, container-sync and pod-sync
// providers ask for t, in that order. A provider that cannot tell settles
// (Target::settle) for the resources it serves.
std::vector<Request> provided_requests(const Target& t, const Spec& spec);

// direct_request reads annotation `r.name` = value. vouched is the chain of
// the resolved answer that set exactly that annotation, nullptr when no
// answer did: such a request is the tenant's, and must name devices the pod
// holds unless direct-requires-pod-devices = false. A vouched one is checked
// for a reference cycle instead. nullopt: nothing to ask, or skipped.
std::optional<Request> direct_request(const Target& t, const Resource& r, const std::string& value, const Via* vouched);

}  // namespace specshim::device_plugin
