// SPDX-License-Identifier: Apache-2.0
// The requirements modifier's class, private to spec-modifiers: the chain
// builds it through make_requirements (specshim/modifiers/factories.h); doctor reads what it
// is built from in chain_facts (specshim/modifiers/chain_facts.h), not from the object.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/modifiers/modifier.h"
#include "specshim/modifiers/requirements.h"

namespace specshim::requirements {

// Requirements applies, for every rule whose match holds, the rule's
// additions. It only ever adds: capabilities to the sets named (only when the
// spec has a capabilities object: without one the process keeps the
// runtime's full set), rlimits raised to at least the rule's values, allow
// rules for syscalls a confining seccomp profile would deny, supplementary
// gids, and env keys the spec does not already set. Sandbox containers are
// left alone.
class Requirements : public Modifier {
 public:
  explicit Requirements(std::vector<Rule> rules, InheritedLimit inherited = own_limit);
  std::string_view name() const override { return "requirements"; }
  void apply(Spec& spec, Context& ctx) override;
  const std::vector<Rule>& rules() const { return rules_; }

 private:
  std::vector<Rule> rules_;
  InheritedLimit inherited_;
};

}  // namespace specshim::requirements
