// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier's DRA hand-over ([device-plugin.dra]): a
// container-sync or pod-sync sibling gets the CDI names of its source
// containers' DRA claims, handed to cdi in specshim.io/cdi-devices and as
// grants. Never a CRI container's own claims: containerd injected those
// from CRI.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "device_plugin/target.h"
#include "specshim/base/spec.h"
#include "specshim/modifiers/modifier.h"

namespace specshim::device_plugin {

class DraHandOver {
 public:
  // hand_over merges the claims' names into spec and ctx. They are gathered
  // once per create (one PodResources answer) and merged again in every
  // pass, which changes nothing after the first. Returns what changed, ""
  // for nothing. Throws Error: no on-error here (no resource entry carries
  // a claim), a sibling that asked for its source's devices never runs
  // without them.
  std::string hand_over(const Target& t, Spec& spec, Context& ctx);

 private:
  std::optional<std::string> asked_;                        // the sources gathered, "from\npod-sync"
  std::vector<std::pair<std::string, std::string>> names_;  // CDI name, where it came from
};

}  // namespace specshim::device_plugin
