// SPDX-License-Identifier: Apache-2.0
// What env-devices reads as device names besides the variable: the
// volume-mounts strategy's mounts (NVIDIA's
// accept-nvidia-visible-devices-as-volume-mounts), in a request and in a
// plugin's answer. grant_of (specshim/modifiers/env_devices.h) is built on them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/spec.h"

namespace specshim::env_devices {

// mounted_name turns a path below the volume-mounts dir into a device name,
// as NCT does: cdi/<vendor>/<class>/<name> and cdi/<vendor>/<class>=<name>
// are qualified names; imex/<channel> is no GPU ("").
std::string mounted_name(std::string_view rel);

// below returns path relative to dir when it lies strictly below it.
std::optional<std::string> below(std::string_view dir, std::string_view path);

// add_name appends a non-empty name that names does not hold yet.
void add_name(std::vector<std::string>& names, std::string name);

// mounted lists the devices of the volume-mounts strategy: /dev/null bind
// mounts below dir, one per destination, in mount order.
std::vector<std::string> mounted(const Spec& spec, const std::string& dir);

// dev_null_below returns the destination of a /dev/null mount relative to
// dir when it lies below it: one such mount is one device of the
// volume-mounts strategy. nullopt for any other mount.
std::optional<std::string> dev_null_below(const Json& mount, std::string_view dir);

}  // namespace specshim::env_devices
