// SPDX-License-Identifier: Apache-2.0
// What a device plugin's answer (or a DRA claim) gave a container, as far as
// device lists go. device-plugin records every answer it merged and every
// claim it handed over (a sibling's grant is its source's); env-devices and
// the pod's allocation (pod_allocation.h) read the kubelet's checkpoint
// through it. It lives in memory only: no annotation can forge one.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specshim/kubelet/types.h"

namespace specshim {

struct Grant {
  std::string resource = {};                                   // nvidia.com/gpu; a claim: its driver
  std::string source = {};                                     // "the checkpoint", "Allocate", "DRA claim `ns/c` …"
  std::vector<std::pair<std::string, std::string>> envs = {};  // the answer's env, in key order
  std::vector<std::string> mounts = {};                        // containerPath of each mount
  std::vector<std::string> cdi_devices = {};                   // CdiDevices and cdi.k8s.io/* annotation values
  bool claim = false;  // a DRA claim's CDI names: they count for every [[env-devices]] kind
  bool operator==(const Grant&) const = default;
};

// granted is what an Allocate answer gave: its env, its mounts' container
// paths, its CDI devices and the names of its cdi.k8s.io/* annotations
// (split at commas). source says where the answer came from.
Grant granted(const kubelet::AllocateResponse& answer, std::string_view resource, std::string_view source);

// GrantedNames is what a grant gave one device kind, as qualified CDI names.
struct GrantedNames {
  std::vector<std::string> names;
  bool all = false;  // the plugin handed over `all`
};

}  // namespace specshim
