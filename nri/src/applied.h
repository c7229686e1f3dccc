// SPDX-License-Identifier: Apache-2.0
// What a runtime makes of an adjustment: NRI's generate.Adjust, which
// containerd and CRI-O both run, for the fields whose result is not simply
// what the adjustment says. The adjustment builder applies it to the view
// and refuses what would come out other than the chain's spec.
#pragma once

#include "specshim/nri/adjust.h"

namespace specshim::nri {

// applied_env is process.env after AdjustEnv: with any env adjustment the
// list is rebuilt entry by entry, an entry without '=' dropped; the first
// entry of an adjusted key gets the adjustment's value (or goes, for a
// removal) and every later entry of it is added again with its own value,
// which, as runtime-tools keeps one entry per key, lands on the first: a
// repeated key ends with its last original value. Keys of the adjustment
// not in the list are appended.
Json applied_env(const Json& env, const api::ContainerAdjustment& adj);

// applied_mounts is mounts after AdjustMounts: per adjusted mount the first
// mount at its destination is removed and the new one appended (a removal
// removes only), then, when anything was adjusted, the list is sorted by
// the destination's depth, then by destination.
Json applied_mounts(const Json& mounts, const api::ContainerAdjustment& adj);

}  // namespace specshim::nri
