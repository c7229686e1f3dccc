// SPDX-License-Identifier: Apache-2.0
// What the hot-plug verbs (attach, detach, attached, reconcile) read of
// specshim's config for the engine (specshim/live/attach.h), once per verb.
#pragma once

#include <memory>
#include <string>

#include "specshim/config.h"
#include "specshim/live/attach.h"

namespace specshim::shim::attach {

using namespace live::attach;

// read_setup finds the runtime as create does ([runtime] path, else runc on
// PATH) and reads [cdi] spec-dirs, for the containers under root.
Setup read_setup(const config::Document& doc, const std::string& root);

// bound_of returns the Bound when the config's [hotplug] bound is
// "pod-allocation" (proc: where the driver's GPU list is), else nullptr.
std::unique_ptr<Bound> bound_of(const config::Document& doc, const std::string& proc);

}  // namespace specshim::shim::attach
