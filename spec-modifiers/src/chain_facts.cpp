// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/chain_facts.h"

#include "specshim/modifiers/factories.h"

namespace specshim {

ChainFacts chain_facts(const config::Document& doc) {
  config::Section root = doc.root();
  const ChainPlan plan = plan_chain(root);
  ChainFacts facts;
  if (plan.lists("requirements") && root.kind("requirements") == config::Kind::array) {
    auto view = root.only("requirements");
    facts.rules = requirements::read_rules(view);
  }
  if (plan.lists("env-devices")) facts.env_devices = plan.env_devices;
  if (plan.lists("patches") && root.kind("patches") == config::Kind::array) {
    auto view = root.only("patches");
    facts.patches = patches::read_patches(view, plan.opt_out);
  }
  return facts;
}

}  // namespace specshim
