// SPDX-License-Identifier: Apache-2.0
#include "specshim/kubelet/json.h"

namespace specshim::kubelet {

using nlohmann::json;

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
  v.share_id.reset();
  if (auto it = j.find("share_id"); it != j.end() && !it->is_null()) v.share_id = it->get<std::string>();
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
  if (auto it = j.find("alloc"); it != j.end() && !it->is_null()) v.alloc = it->get<AllocateResponse>();
}

}  // namespace specshim::kubelet
