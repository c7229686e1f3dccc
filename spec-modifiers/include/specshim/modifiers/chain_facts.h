// SPDX-License-Identifier: Apache-2.0
// What a config's chain is built from, for a verb that describes the chain
// (doctor) without building it or looking into its modifiers.
#pragma once

#include <vector>

#include "specshim/base/config.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/modifiers/patches.h"
#include "specshim/modifiers/requirements.h"

namespace specshim {

// ChainFacts are the rule lists of the modifiers a config puts in its chain
// ([chain] order lists them, their tables are there), read by the same
// readers their factories use. A modifier left out of the order has none.
struct ChainFacts {
  std::vector<requirements::Rule> rules;        // [[requirements]]
  std::vector<env_devices::Entry> env_devices;  // [[env-devices]], with [kubelet]'s root and budget
  std::vector<patches::Patch> patches;          // [[patches]]
};

// chain_facts reads them from doc, a config read_config_file accepted.
// Throws config errors, as build_chain does for the same document.
ChainFacts chain_facts(const config::Document& doc);

}  // namespace specshim
