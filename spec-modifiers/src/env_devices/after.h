// SPDX-License-Identifier: Apache-2.0
// What a variable says once env-devices handed its devices to cdi, so that
// a runtime after specshim (NVIDIA's, Ascend's) reads no request of its own
// in it: the entry's `after` (void or keep), and a clamped request's value.
#pragma once

#include <string>
#include <vector>

#include "specshim/base/spec.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/modifiers/modifier.h"

namespace specshim::env_devices {

// make_inert leaves nothing a runtime after specshim would read as a
// request: NVIDIA's convention appends `<ENV>=void` (its runtime reads the
// last entry, and `void` anywhere means no device); a vendor whose value
// is kept (Ascend: tools read it as the ids they see, and stop on `void`)
// loses the variable, which its runtime reads as no request.
void make_inert(const Entry& e, Spec& spec, std::vector<std::string>& changes);

// keep_within: a kept variable of a clamped request says what the grant
// injects, not what was asked beyond it, so a runtime after specshim reads
// the grant. A request within its grant keeps its own value.
void keep_within(const Entry& e, const DeviceRequest& req, Spec& spec, std::vector<std::string>& changes);

// drop_legacy_hooks removes the vendor's own hooks (Vendor::legacy_hooks,
// by a hook path's last component, from every hook list): such a hook reads
// the variable and injects devices itself, around the grant; once
// env-devices owns the variable its devices come through cdi. dockerd's
// `--gpus` adds NVIDIA's prestart hook (docs/env-devices.md, "Docker's --gpus").
void drop_legacy_hooks(const Entry& e, Spec& spec, std::vector<std::string>& changes);

}  // namespace specshim::env_devices
