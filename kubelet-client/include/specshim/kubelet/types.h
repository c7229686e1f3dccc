// SPDX-License-Identifier: Apache-2.0
// Plain C++ values for what the kubelet and device plugins answer. These are
// the only types kubelet-client shows its users; the generated protobuf types
// stay inside its .cpp files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace specshim::kubelet {

// ResourceDevices maps an extended resource name ("nvidia.com/gpu") to its
// device IDs, each once, in the order the kubelet first named them.
using ResourceDevices = std::map<std::string, std::vector<std::string>>;

// ContainerMemory is one block of memory or hugepages the kubelet's memory
// manager pinned for a container (PodResources v1 ContainerMemory).
struct ContainerMemory {
  std::string memory_type;  // "memory", "hugepages-1Gi", ...
  std::uint64_t size = 0;   // bytes
  std::vector<std::int64_t> numa_nodes;
  bool operator==(const ContainerMemory&) const = default;
};

// ClaimResource is one device of a DRA claim, named by the driver, pool and
// device triplet, with the CDI devices the driver made for it (zero or more).
struct ClaimResource {
  std::string driver_name;  // "gpu.nvidia.com"
  std::string pool_name;
  std::string device_name;
  std::vector<std::string> cdi_devices;  // fully-qualified CDI names
  std::optional<std::string> share_id;   // set only for a shared (consumable-capacity) allocation
  bool operator==(const ClaimResource&) const = default;
};

// DynamicResource is one DRA resource claim a container uses.
struct DynamicResource {
  std::string claim_name;
  std::string claim_namespace;
  std::vector<ClaimResource> claim_resources;
  bool operator==(const DynamicResource&) const = default;
};

// ContainerAssignment is what the kubelet assigned a container besides
// device-plugin devices: exclusive CPUs (CPU manager, static policy), pinned
// memory (memory manager) and DRA claims (gate
// KubeletPodResourcesDynamicResources). An older kubelet, or one with these
// managers or gates off, sends none: every vector is empty.
struct ContainerAssignment {
  std::vector<std::int64_t> cpu_ids;
  std::vector<ContainerMemory> memory;
  std::vector<DynamicResource> dynamic_resources;
  bool empty() const { return cpu_ids.empty() && memory.empty() && dynamic_resources.empty(); }
  bool operator==(const ContainerAssignment&) const = default;
};

// PodResources is what the kubelet assigned to one pod: per container name,
// resource -> device IDs. Containers without devices map to an empty
// ResourceDevices; plain init containers are absent (the kubelet does not
// report them). assignments holds the rest, only for containers that have
// any; assignment(name) reads it with empty vectors for the others.
struct PodResources {
  std::string ns;
  std::string name;
  std::map<std::string, ResourceDevices> containers;
  std::map<std::string, ContainerAssignment> assignments = {};
  const ContainerAssignment& assignment(const std::string& container) const {
    static const ContainerAssignment none;
    auto it = assignments.find(container);
    return it == assignments.end() ? none : it->second;
  }
  bool operator==(const PodResources&) const = default;
};

// Mount is a host path a plugin wants bind-mounted into the container.
struct Mount {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};

// DeviceSpec is a host device node a plugin wants in the container;
// permissions is a subset of "rwm".
struct DeviceSpec {
  std::string container_path;
  std::string host_path;
  std::string permissions;
  bool operator==(const DeviceSpec&) const = default;
};

// AllocateResponse is one container's answer from a plugin's Allocate (the
// v1beta1 ContainerAllocateResponse), as a value.
struct AllocateResponse {
  std::map<std::string, std::string> envs;
  std::vector<Mount> mounts;
  std::vector<DeviceSpec> devices;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;  // fully-qualified CDI names
  bool operator==(const AllocateResponse&) const = default;
};

// PluginOptions is a plugin's GetDevicePluginOptions answer.
struct PluginOptions {
  bool pre_start_required = false;
  bool get_preferred_allocation_available = false;
  bool operator==(const PluginOptions&) const = default;
};

// Device is one entry of a plugin's ListAndWatch list.
struct Device {
  std::string id;
  std::string health;  // "Healthy" / "Unhealthy"
  std::vector<std::int64_t> numa_nodes;
  bool operator==(const Device&) const = default;
};

// PluginInfo describes one socket in the device-plugins directory: its
// devices from the first ListAndWatch message, or why it could not be read.
struct PluginInfo {
  std::filesystem::path socket;
  std::string resource;  // guessed from the checkpoint's RegisteredDevices; may be empty
  std::vector<Device> devices;
  std::string error;  // empty when the plugin answered
  bool reachable() const { return error.empty(); }
  bool operator==(const PluginInfo&) const = default;
};

// CheckpointEntry is one (pod UID, container, resource) allocation from the
// kubelet's device-manager checkpoint.
struct CheckpointEntry {
  std::string pod_uid;
  std::string container;
  std::string resource;
  std::vector<std::string> device_ids;    // de-duplicated across NUMA nodes
  std::optional<AllocateResponse> alloc;  // the plugin's answer the kubelet cached, when present
  bool operator==(const CheckpointEntry&) const = default;
};

}  // namespace specshim::kubelet
