// SPDX-License-Identifier: Apache-2.0
#include "specshim/chain.h"

#include <algorithm>
#include <exception>

#include "specshim/error.h"
#include "specshim/log.h"

namespace specshim {

Chain::Chain(std::vector<std::unique_ptr<Modifier>> modifiers, int max_passes)
    : modifiers_(std::move(modifiers)), max_passes_(max_passes) {
  if (max_passes_ < 1) throw Error("chain: max-passes must be at least 1");
}

ChainResult Chain::run(Spec& spec, Context& ctx) const {
  ChainResult result;
  std::vector<std::string> last_changed;
  // One copy of the spec, and one more after each change: most modifiers
  // change nothing, and comparing costs no allocation. After each modifier
  // `before` equals the spec, so a pass starts with the copy the last one
  // ended with. The copy made before the first change is kept as
  // result.original.
  Json before = spec.json();
  for (int pass = 1; pass <= max_passes_; ++pass) {
    ctx.pass = pass;
    result.passes = pass;
    last_changed.clear();
    for (const auto& m : modifiers_) {
      auto files_before = ctx.bundle_files.size();
      try {
        m->apply(spec, ctx);
      } catch (...) {
        std::throw_with_nested(Error(std::string(m->name())));
      }
      if (spec.json() == before && ctx.bundle_files.size() == files_before) continue;
      std::string change = m->last_change();
      last_changed.push_back(std::string(m->name()) + (change.empty() ? "" : " (" + change + ")"));
      if (std::find(result.changed_by.begin(), result.changed_by.end(), m->name()) == result.changed_by.end())
        result.changed_by.emplace_back(m->name());
      if (log::enabled(log::Level::debug))
        log::debug("pass {}: {} changed {}", pass, m->name(), Json::diff(before, spec.json()).dump());
      // The first change is in pass 1, so `before` is still the spec as it came in.
      if (!result.original) result.original = std::move(before);
      before = spec.json();
    }
    if (last_changed.empty()) return result;
  }
  std::string names;
  for (const auto& n : last_changed) names += (names.empty() ? "" : ", ") + n;
  throw Error("spec did not converge after " + std::to_string(max_passes_) + " passes; still changing it: " + names);
}

}  // namespace specshim
