// SPDX-License-Identifier: Apache-2.0
// Fuzzes the lossless spec DOM: parse must never crash, must accept and
// refuse what nlohmann's strict parser does and build the same tree (number
// types included), and what it writes must parse back to the same document
// and write the same text again. Compact and without a trailing newline, it
// writes exactly what nlohmann's dump() does.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "json_reference.h"
#include "specshim/base/error.h"
#include "specshim/base/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<specshim::Json> want = specshim::test::reference_parse(text);
  if (want && !want->is_object()) want.reset();
  try {
    auto spec = specshim::Spec::parse(text);
    // specshim's reader stops at 512 levels; nlohmann has no bound.
    if (!want || !specshim::test::same_tree(spec.json(), *want)) std::abort();
    std::string once = spec.serialize();
    auto again = specshim::Spec::parse(once);
    if (again.json() != spec.json()) std::abort();
    if (again.serialize() != once) std::abort();
    std::string dumped = spec.json().dump();
    if (specshim::Spec::parse(dumped).serialize() != dumped) std::abort();
  } catch (const specshim::Error& e) {
    if (want && std::string_view(e.what()).find("nested deeper than") == std::string_view::npos) std::abort();
  }
  return 0;
}
