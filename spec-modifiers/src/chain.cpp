// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/chain.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "specshim/base/error.h"
#include "specshim/base/log.h"

namespace specshim {

Chain::Chain(std::vector<std::unique_ptr<Modifier>> modifiers, int max_passes)
    : modifiers_(std::move(modifiers)), max_passes_(max_passes) {
  if (max_passes_ < 1) throw Error("chain: max-passes must be at least 1");
}

ChainResult Chain::run(Spec& spec, Context& ctx) const {
  ChainResult result;
  std::vector<std::string> last_changed;
  // The spec is watched while a modifier runs: a copy is made only when the
  // modifier asks for non-const access, and only then is it compared. Most
  // modifiers only read. The copy made before the first change is kept as
  // result.original.
  //
  // An idempotent modifier that already ran on the spec and context as they
  // are now would change nothing: it is not run again. changes counts the
  // changes so far; ran_at[i] is that count when modifier i last ran. In a
  // create where cdi alone changes the spec, the second pass runs only the
  // modifiers before it.
  int changes = 0;
  std::vector<int> ran_at(modifiers_.size(), -1);
  for (int pass = 1; pass <= max_passes_; ++pass) {
    ctx.pass = pass;
    result.passes = pass;
    last_changed.clear();
    for (std::size_t i = 0; i < modifiers_.size(); ++i) {
      const auto& m = modifiers_[i];
      if (ran_at[i] == changes && m->idempotent()) continue;
      auto files_before = ctx.bundle_files.size();
      spec.watch();
      try {
        m->apply(spec, ctx);
      } catch (...) {
        spec.watched();
        std::throw_with_nested(Error(std::string(m->name())));
      }
      std::optional<Json> before = spec.watched();
      const Json& now = std::as_const(spec).json();
      if ((!before || *before == now) && ctx.bundle_files.size() == files_before) {
        ran_at[i] = changes;
        continue;
      }
      ran_at[i] = ++changes;
      std::string change = m->last_change();
      last_changed.push_back(std::string(m->name()) + (change.empty() ? "" : " (" + change + ")"));
      if (std::find(result.changed_by.begin(), result.changed_by.end(), m->name()) == result.changed_by.end())
        result.changed_by.emplace_back(m->name());
      if (log::enabled(log::Level::debug))
        log::debug("pass {}: {} changed {}", pass, m->name(), Json::diff(before ? *before : now, now).dump());
      // Nothing changed before the first change, so `before` is the spec as it came in.
      if (!result.original) result.original = before ? std::move(*before) : now;
    }
    if (last_changed.empty()) return result;
  }
  std::string names;
  for (const auto& n : last_changed) names += (names.empty() ? "" : ", ") + n;
  throw Error("spec did not converge after " + std::to_string(max_passes_) + " passes; still changing it: " + names);
}

}  // namespace specshim
