// SPDX-License-Identifier: Apache-2.0
// Chain runs modifiers to a fixed point.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "specshim/modifiers/modifier.h"

namespace specshim {

struct ChainResult {
  int passes = 0;                       // passes run, the last one changed nothing
  std::vector<std::string> changed_by;  // modifiers that changed the spec, in first-change order
  std::optional<Json> original;         // the spec before the first change; empty: none changed it
};

// Chain applies its modifiers in order, pass after pass, until a whole pass
// leaves the spec unchanged. Change is detected here by comparing the spec
// before and after each modifier that asked for non-const access to it
// (Spec::watch), never reported by the modifiers. An idempotent modifier is
// not run again while nothing changed since it last ran. More than max_passes
// passes is an error naming the modifiers still changing the spec.
class Chain {
 public:
  explicit Chain(std::vector<std::unique_ptr<Modifier>> modifiers, int max_passes = 8);

  ChainResult run(Spec& spec, Context& ctx) const;

  const std::vector<std::unique_ptr<Modifier>>& modifiers() const { return modifiers_; }

 private:
  std::vector<std::unique_ptr<Modifier>> modifiers_;
  int max_passes_;
};

}  // namespace specshim
