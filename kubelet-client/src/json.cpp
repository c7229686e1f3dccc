// SPDX-License-Identifier: Apache-2.0
// JSON forms of the plain kubelet types. Absent keys read as defaults, so
// the helper may omit empty fields and old fake configs keep working.
#include "specshim/kubelet/json.h"

namespace specshim::kubelet {

using nlohmann::json;

namespace {
template <typename T>
void get_opt(const json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) it->get_to(out);
}
}  // namespace

void to_json(json& j, const PodResources& v) {
  j = json{{"namespace", v.ns}, {"name", v.name}, {"containers", v.containers}};
}
void from_json(const json& j, PodResources& v) {
  get_opt(j, "namespace", v.ns);
  get_opt(j, "name", v.name);
  get_opt(j, "containers", v.containers);
}

void to_json(json& j, const Mount& v) {
  j = json{{"container_path", v.container_path}, {"host_path", v.host_path}, {"read_only", v.read_only}};
}
void from_json(const json& j, Mount& v) {
  get_opt(j, "container_path", v.container_path);
  get_opt(j, "host_path", v.host_path);
  get_opt(j, "read_only", v.read_only);
}

void to_json(json& j, const DeviceSpec& v) {
  j = json{{"container_path", v.container_path}, {"host_path", v.host_path}, {"permissions", v.permissions}};
}
void from_json(const json& j, DeviceSpec& v) {
  get_opt(j, "container_path", v.container_path);
  get_opt(j, "host_path", v.host_path);
  get_opt(j, "permissions", v.permissions);
}

void to_json(json& j, const AllocateResponse& v) {
  j = json{{"envs", v.envs},
           {"mounts", v.mounts},
           {"devices", v.devices},
           {"annotations", v.annotations},
           {"cdi_devices", v.cdi_devices}};
}
void from_json(const json& j, AllocateResponse& v) {
  get_opt(j, "envs", v.envs);
  get_opt(j, "mounts", v.mounts);
  get_opt(j, "devices", v.devices);
  get_opt(j, "annotations", v.annotations);
  get_opt(j, "cdi_devices", v.cdi_devices);
}

void to_json(json& j, const PluginOptions& v) {
  j = json{{"pre_start_required", v.pre_start_required},
           {"get_preferred_allocation_available", v.get_preferred_allocation_available}};
}
void from_json(const json& j, PluginOptions& v) {
  get_opt(j, "pre_start_required", v.pre_start_required);
  get_opt(j, "get_preferred_allocation_available", v.get_preferred_allocation_available);
}

void to_json(json& j, const Device& v) {
  j = json{{"id", v.id}, {"health", v.health}, {"numa_nodes", v.numa_nodes}};
}
void from_json(const json& j, Device& v) {
  get_opt(j, "id", v.id);
  get_opt(j, "health", v.health);
  get_opt(j, "numa_nodes", v.numa_nodes);
}

void to_json(json& j, const PluginInfo& v) {
  j = json{{"socket", v.socket.string()}, {"resource", v.resource}, {"devices", v.devices}, {"error", v.error}};
}
void from_json(const json& j, PluginInfo& v) {
  std::string socket;
  get_opt(j, "socket", socket);
  v.socket = socket;
  get_opt(j, "resource", v.resource);
  get_opt(j, "devices", v.devices);
  get_opt(j, "error", v.error);
}

void to_json(json& j, const CheckpointEntry& v) {
  j = json{{"pod_uid", v.pod_uid}, {"container", v.container}, {"resource", v.resource}, {"device_ids", v.device_ids}};
  if (v.alloc) j["alloc"] = *v.alloc;
}
void from_json(const json& j, CheckpointEntry& v) {
  get_opt(j, "pod_uid", v.pod_uid);
  get_opt(j, "container", v.container);
  get_opt(j, "resource", v.resource);
  get_opt(j, "device_ids", v.device_ids);
  if (auto it = j.find("alloc"); it != j.end() && !it->is_null()) v.alloc = it->get<AllocateResponse>();
}

}  // namespace specshim::kubelet
