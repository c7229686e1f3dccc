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

// PodResources is what the kubelet assigned to one pod: per container name,
// resource -> device IDs. Containers without devices map to an empty
// ResourceDevices; plain init containers are absent (the kubelet does not
// report them).
struct PodResources {
  std::string ns;
  std::string name;
  std::map<std::string, ResourceDevices> containers;
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
