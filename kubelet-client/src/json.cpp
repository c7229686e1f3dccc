// SPDX-License-Identifier: Apache-2.0
#include "specshim/kubelet/json.h"

namespace specshim::kubelet {

using nlohmann::json;

namespace {

// optional_at reads an optional field: an absent key or null is no value.
template <typename T>
std::optional<T> optional_at(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

}  // namespace

void to_json(json& j, const ClaimResource& v) {
  j = json{{"driver_name", v.driver_name},
           {"pool_name", v.pool_name},
           {"device_name", v.device_name},
           {"cdi_devices", v.cdi_devices}};
  if (v.share_id) j["share_id"] = *v.share_id;
}

void from_json(const json& j, ClaimResource& v) {
  v.driver_name = j.value("driver_name", "");
  v.pool_name = j.value("pool_name", "");
  v.device_name = j.value("device_name", "");
  v.cdi_devices = j.value("cdi_devices", std::vector<std::string>{});
  v.share_id = optional_at<std::string>(j, "share_id");
}

void to_json(json& j, const CheckpointEntry& v) {
  j = json{{"pod_uid", v.pod_uid}, {"container", v.container}, {"resource", v.resource}, {"device_ids", v.device_ids}};
  if (v.alloc) j["alloc"] = *v.alloc;
}

void from_json(const json& j, CheckpointEntry& v) {
  v.pod_uid = j.value("pod_uid", "");
  v.container = j.value("container", "");
  v.resource = j.value("resource", "");
  v.device_ids = j.value("device_ids", std::vector<std::string>{});
  v.alloc = optional_at<AllocateResponse>(j, "alloc");
}

}  // namespace specshim::kubelet
