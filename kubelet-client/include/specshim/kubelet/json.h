// SPDX-License-Identifier: Apache-2.0
// JSON forms of the plain kubelet types (nlohmann::json to_json/from_json),
// used by the specshim-kubelet helper protocol, the fake kubelet's config and
// `specshim doctor`. Field names are snake_case copies of the struct fields.
#pragma once

#include <nlohmann/json.hpp>

#include "specshim/kubelet/types.h"

namespace specshim::kubelet {

void to_json(nlohmann::json& j, const PodResources& v);
void from_json(const nlohmann::json& j, PodResources& v);
void to_json(nlohmann::json& j, const Mount& v);
void from_json(const nlohmann::json& j, Mount& v);
void to_json(nlohmann::json& j, const DeviceSpec& v);
void from_json(const nlohmann::json& j, DeviceSpec& v);
void to_json(nlohmann::json& j, const AllocateResponse& v);
void from_json(const nlohmann::json& j, AllocateResponse& v);
void to_json(nlohmann::json& j, const PluginOptions& v);
void from_json(const nlohmann::json& j, PluginOptions& v);
void to_json(nlohmann::json& j, const Device& v);
void from_json(const nlohmann::json& j, Device& v);
void to_json(nlohmann::json& j, const PluginInfo& v);
void from_json(const nlohmann::json& j, PluginInfo& v);
void to_json(nlohmann::json& j, const CheckpointEntry& v);
void from_json(const nlohmann::json& j, CheckpointEntry& v);

}  // namespace specshim::kubelet
