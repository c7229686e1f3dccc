// SPDX-License-Identifier: Apache-2.0
// Reconcile one live container with the wants the desired-state file lists
// for it (specshim/node/hotplug.h keys: "device H:C:P", "gpu UUID", "cdi NAME"),
// through the hot-plug engine: the wants the record says reconcile holds
// are compared with these; the missing ones are planned in, the extra ones
// released, and the container is moved to the result in one transition, so
// the undo guarantees are attach's. What attach gave by hand and the spec's
// own devices are never touched: the record holds each reference apart.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "specshim/live/attach.h"

namespace specshim::live::attach {

// Reconciled is what one container's reconcile did, for the verb to say.
struct Reconciled {
  Record before;                     // the record it started from
  std::vector<std::string> added;    // wants planned in, in the file's order
  std::vector<std::string> dropped;  // wants released
  // wants [hotplug] bound refused (with why): not given, not recorded, asked
  // again next pass
  std::vector<std::pair<std::string, std::string>> refused;
  // CDI edits of added wants that a running container cannot take
  std::vector<std::pair<std::string, NotApplied>> not_applied;
  // dropped wants whose CDI device the spec holds since create (Released)
  std::vector<std::string> in_spec;
  Change change;
};

// reconcile_container gives the live container c what wanted asks for and
// takes back what reconcile gave that wanted no longer lists (proc: where
// the NVIDIA driver's GPU list is; bound: [hotplug] bound, or null). It
// returns nullopt, opening and locking nothing, when the record already
// holds exactly wanted. Throws Error when the container cannot be opened or
// moved (nothing is changed then).
std::optional<Reconciled> reconcile_container(const Setup& setup, const ContainerState& c,
                                              const std::vector<hotplug::Want>& wanted, const std::string& proc,
                                              pod_allocation::Node* bound);

}  // namespace specshim::live::attach
