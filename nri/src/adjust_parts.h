// SPDX-License-Identifier: Apache-2.0
// What adjust.cpp and adjust_devices.cpp share: the message a refused field
// gets and the lookups into a spec's JSON.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "specshim/base/error.h"
#include "specshim/nri/adjust.h"

namespace specshim::nri {

// Refusal builds the one message every refused field gets.
struct Refusal {
  const Level& level;
  std::string_view changed_by;
  [[noreturn]] void operator()(const std::string& field, const std::string& why) const {
    std::string by = changed_by.empty() ? "the chain" : "the chain (" + std::string(changed_by) + ")";
    throw Error(by + " changed " + field + ", which NRI on " + level.runtime + " cannot pass on: " + why);
  }
};

// array_at is the array at path in j, or an empty array when there is none.
const Json& array_at(const Json& j, std::initializer_list<const char*> path);

// by_key: the objects of list by their string member key.
std::map<std::string, Json> by_key(const Json& list, const char* key);

// adjust_devices (adjust_devices.cpp) puts the chain's changes to
// linux.devices and linux.resources.devices in adj, or refuses them.
void adjust_devices(const Json& before, const Json& after, api::ContainerAdjustment& adj, const Level& level,
                    const Refusal& refuse);

}  // namespace specshim::nri
