// SPDX-License-Identifier: Apache-2.0
// What the hot-plug verbs (attach, detach, attached, reconcile) take from
// specshim's config for the engine (specshim/live/attach.h).
#pragma once

#include <memory>
#include <string>

#include "specshim/live/attach.h"
#include "specshim/modifiers/config_file.h"

namespace specshim::shim::attach {

// setup_of finds the runtime as create does ([runtime] path, else runc or
// crun on PATH) for the containers under root, with config's [cdi] dirs.
live::attach::Setup setup_of(const ConfigFile& config, const std::string& root);

// bound_of returns the node's allocation view when [hotplug] bound is "pod-allocation"
// (proc: where the driver's GPU list is), else nullptr.
std::unique_ptr<pod_allocation::Node> bound_of(const ConfigFile& config, const std::string& proc);

}  // namespace specshim::shim::attach
