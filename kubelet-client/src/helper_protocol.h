// SPDX-License-Identifier: Apache-2.0
// The line protocol between HelperClient and the specshim-kubelet helper:
// one JSON object per line each way, over a socketpair that is the helper's
// stdin and stdout.
//   request:  {"op": "pod_resources", "total_ms": 2000, "deadline_ns": <CLOCK_MONOTONIC>, ...arguments}
//   response: {"ok": true, "result": ...}
//           | {"ok": false, "kind": "unavailable|deadline|not-found|protocol|other", "message": "..."}
// Operations and their arguments:
//   pod_resources {namespace, name} -> PodResources
//   list_pods {}                    -> [PodResources] (doctor only)
//   allocatable {}                  -> ResourceDevices
//   plugin_options {socket}         -> PluginOptions
//   allocate {socket, resource, device_ids} -> AllocateResponse
//   list_plugins {}                 -> [PluginInfo]
// The helper exits at end of input.
#pragma once

#include <cstddef>

namespace specshim::kubelet::helper {

inline constexpr const char* kHelperName = "specshim-kubelet";
// Upper bound of one line either way (a List of a huge node is filtered to
// one pod before it is sent, so real answers are far smaller).
inline constexpr std::size_t kMaxLineBytes = 64u << 20;

}  // namespace specshim::kubelet::helper
