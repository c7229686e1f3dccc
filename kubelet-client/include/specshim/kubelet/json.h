// SPDX-License-Identifier: Apache-2.0
// JSON forms of the plain kubelet types (nlohmann::json to_json/from_json),
// used by the specshim-kubelet helper protocol, the fake kubelet's config and
// `specshim doctor`. Keys are the struct fields' names; absent keys read as
// the field's default.
#pragma once

#include <nlohmann/json.hpp>

#include "specshim/kubelet/types.h"

namespace specshim::kubelet {

// ClaimResource's share_id is optional: the key is absent when it is.
void to_json(nlohmann::json& j, const ClaimResource& v);
void from_json(const nlohmann::json& j, ClaimResource& v);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ContainerMemory, memory_type, size, numa_nodes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DynamicResource, claim_name, claim_namespace, claim_resources)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ContainerAssignment, cpu_ids, memory, dynamic_resources)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PodResources, ns, name, containers, assignments)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Mount, container_path, host_path, read_only)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DeviceSpec, container_path, host_path, permissions)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(AllocateResponse, envs, mounts, devices, annotations, cdi_devices)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PluginOptions, pre_start_required, get_preferred_allocation_available)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Device, id, health, numa_nodes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PluginInfo, socket, resource, devices, error)

// CheckpointEntry's alloc is optional: the key is absent when it is.
void to_json(nlohmann::json& j, const CheckpointEntry& v);
void from_json(const nlohmann::json& j, CheckpointEntry& v);

}  // namespace specshim::kubelet
