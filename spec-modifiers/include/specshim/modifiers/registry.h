// SPDX-License-Identifier: Apache-2.0
// The list of modifiers specshim knows, and building a chain from the config.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/modifiers/chain.h"
#include "specshim/modifiers/factories.h"

namespace specshim {

// ModifierEntry names one modifier and how to build it from its config table
// ([<name>] in config.toml; the table may be absent), the chain's plan
// (ChainPlan) and the chain's kubelet sessions. make returns nullptr when
// the modifier is disabled by its config.
struct ModifierEntry {
  std::string_view name;
  std::unique_ptr<Modifier> (*make)(config::Section& section, const ChainPlan& plan, KubeletSessions& sessions);
};

// registry lists every modifier in its default chain order.
const std::vector<ModifierEntry>& registry();

// default_order is [chain] order when the key is absent: every modifier, in
// registry order.
std::vector<std::string> default_order();

// build_chain plans the chain (plan_chain: [chain] order and max-passes,
// what modifiers tell each other), reads each modifier's table from root,
// builds the enabled modifiers in order and returns the chain. Throws Error
// for unknown names, unknown keys and bad values.
Chain build_chain(config::Section& root);

}  // namespace specshim
