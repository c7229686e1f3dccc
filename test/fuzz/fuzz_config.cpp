// SPDX-License-Identifier: Apache-2.0
// Fuzzes the TOML config loader and the strict readers of every modifier, and
// holds the pre-scan to its word: toml++ reads the file without its comments
// exactly as it reads the whole file, or refuses it.
#include <toml++/toml.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "specshim/base/config.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/registry.h"
#include "toml_prescan.h"

namespace {

std::optional<toml::table> parse_or_none(std::string_view text) {
  try {
    return toml::parse(text, std::string_view("fuzz.toml"));
  } catch (const toml::parse_error&) {
    return std::nullopt;
  }
}

// same_positions: every node starts at the same line and column in both.
bool same_positions(const toml::node& a, const toml::node& b) {
  if (a.source().begin != b.source().begin) return false;
  if (auto* t = a.as_table()) {
    for (auto&& [k, v] : *t)
      if (!same_positions(v, *b.as_table()->get(k))) return false;
  } else if (auto* arr = a.as_array()) {
    for (std::size_t i = 0; i < arr->size(); ++i)
      if (!same_positions(*arr->get(i), *b.as_array()->get(i))) return false;
  }
  return true;
}

void check_prescan(std::string_view text) {
  auto pre = specshim::detail::prescan_toml(text);
  if (pre.bare_non_ascii_line) return;
  auto stripped = parse_or_none(pre.text);
  if (!stripped) return;  // Document::parse reads the whole file again for the error
  auto whole = parse_or_none(text);
  if (!whole || *whole != *stripped || !same_positions(*whole, *stripped)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto doc = specshim::config::Document::parse(text, "fuzz.toml");
    auto root = doc.root();
    auto chain = specshim::build_chain(root);
  } catch (const specshim::Error&) {
  }
  check_prescan(text);
  return 0;
}
