// SPDX-License-Identifier: Apache-2.0
// The CDI requests other modifiers hand over in memory (Context::device_requests):
// what they need loaded, and which names each resolves to.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/modifiers/modifier.h"
#include "specshim/node/cdi.h"

namespace specshim::cdi {

// kind_wanted is the entry of load_specs' wanted set that keeps every file
// of kind: "kind=" (no device name).
std::string kind_wanted(const std::string& kind);

// wanted_by lists what the requests need loaded: their names, their grants'
// names, and whole kinds for `all`, `none` and a grant of `all`.
std::vector<std::string> wanted_by(const std::vector<DeviceRequest>& requests);

// Plan is what the requests come to once checked against their grants.
struct Plan {
  std::vector<std::string> names;                      // to inject, each once
  std::vector<std::shared_ptr<const SpecFile>> specs;  // whose own edits are wanted without a device (`none`)
  std::map<std::string, std::string> origins;          // name -> the request that asked for it
};

// plan resolves the requests against reg: `all` becomes the kind's `all`
// device (or every device of the kind), `none` the kind's spec files, and a
// bounded request beyond its grant fails, or is clamped to the grant. Names
// reg does not define are kept, for the caller's unresolvable error.
Plan plan(const std::vector<DeviceRequest>& requests, const Registry& reg);

}  // namespace specshim::cdi
