// SPDX-License-Identifier: Apache-2.0
// The patches modifier: site rules an admin declares in [[patches]] tables,
// RFC 6902 operations and mounts set by destination, applied once per
// container and recorded in an annotation. See docs/patches.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/modifiers/modifier.h"
#include "specshim/node/container_match.h"

namespace specshim::patches {

// kRecordAnnotation lists, comma-separated, the patches already applied to a
// spec. A patch named there is never applied again.
inline constexpr std::string_view kRecordAnnotation = "specshim.io/patches";

// Op is one validated RFC 6902 operation, kept as the JSON object
// nlohmann::json::patch takes, plus what messages name it by.
struct Op {
  Json op;                      // {"op": ..., "path": ..., ["from": ...,] ["value": ...]}
  std::string label;            // "ops[1] (remove /linux/sysctl/x)"
  bool create_parents = false;  // add only: create missing parent objects first (not RFC 6902)
};

// Patch is one validated [[patches]] table.
struct Patch {
  std::string name;
  ContainerMatch match;
  std::vector<Op> ops;
  std::vector<Json> set_mounts;  // OCI mount objects, one per destination
};

// read_patches reads and validates every [[patches]] table of s (the view
// build_chain hands the factory). Every error names the patch and, for an
// operation, its index and line. opt_out is [policy] opt-out-annotation
// (ChainPlan::opt_out), set on every patch's match.
std::vector<Patch> read_patches(config::Section& s, std::string_view opt_out);

// normal_destination is how set-mounts compares mount destinations:
// lexically normal, without a trailing slash (/etc//hosts/ is /etc/hosts).
std::string normal_destination(std::string_view destination);

// recorded returns the names in a spec's record annotation.
std::vector<std::string> recorded(const Spec& spec);

}  // namespace specshim::patches
