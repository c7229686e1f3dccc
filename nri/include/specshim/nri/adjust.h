// SPDX-License-Identifier: Apache-2.0
// From NRI's view of a container to the chain and back: the OCI spec
// containerd is about to hand its runtime, as far as NRI shows it, and the
// difference the chain made to it as a ContainerAdjustment the runtime's NRI
// version can express. What it cannot express is refused by name, never
// dropped (docs/nri.md, "What maps").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api.pb.h"
#include "specshim/base/spec.h"

namespace specshim::nri {

namespace api = ::nri::pkg::api::v1alpha1;

// Level is what one runtime's NRI lets a plugin see and change.
struct Level {
  std::string runtime;  // "containerd 2.1.9", for messages
  int nri_minor = 8;    // NRI API v0.<minor>
  // device_rules: explicit devices-cgroup rules in an adjustment are applied
  // (v0.10, containerd 2.2); before, only the allow rule each added device gets.
  bool device_rules() const { return nri_minor >= 10; }
  // args: process.args can be adjusted (v0.10).
  bool args() const { return nri_minor >= 10; }
};

// level_of reads the runtime's NRI version from Configure: NRI_version when
// sent (v0.12 on), else from the runtime's name and version through the
// table of what each release vendors. An unknown runtime gets v0.8, the
// oldest NRI containerd 2.x has: nothing is sent that it would drop.
Level level_of(const api::ConfigureRequest& req);

// spec_view is the OCI spec of container in pod as NRI shows it: process
// args, env, user (containerd 2.3) and rlimits, mounts, hooks, annotations
// (the container's, then those of the pod that match pod_annotations),
// linux devices, device rules, cpuset, namespaces and cgroups path. No root:
// NRI shows no rootfs.
Spec spec_view(const api::PodSandbox& pod, const api::Container& container,
               const std::vector<std::string>& pod_annotations);

// adjustment is what turns before into after, for a runtime at level.
// Throws Error naming the field (and, when given, the modifiers that changed
// the spec) when NRI at that level cannot say it.
api::ContainerAdjustment adjustment(const Json& before, const Json& after, const Level& level,
                                    std::string_view changed_by = {});

}  // namespace specshim::nri
