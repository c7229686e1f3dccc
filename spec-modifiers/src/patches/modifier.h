// SPDX-License-Identifier: Apache-2.0
// The patches modifier's class, private to spec-modifiers: the chain
// builds it through make_patches (specshim/modifiers/factories.h); doctor reads what it
// is built from in chain_facts (specshim/modifiers/chain_facts.h), not from the object.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/modifiers/modifier.h"
#include "specshim/modifiers/patches.h"

namespace specshim::patches {

// Patches applies, in config order, every matching patch not yet recorded,
// then records the ones it applied. A patch applies whole or not at all: an
// operation that fails on this spec throws and the spec keeps its state.
class Patches : public Modifier {
 public:
  explicit Patches(std::vector<Patch> patches) : patches_(std::move(patches)) {}
  std::string_view name() const override { return "patches"; }
  void apply(Spec& spec, Context& ctx) override;
  std::string last_change() const override { return last_change_; }
  const std::vector<Patch>& patches() const { return patches_; }

 private:
  std::vector<Patch> patches_;
  std::string last_change_;
};

}  // namespace specshim::patches
