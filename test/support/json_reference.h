// SPDX-License-Identifier: Apache-2.0
// The reference Spec::parse is held to: nlohmann's strict parser, which it
// replaced, and a comparison of two DOMs that also tells apart number types
// (nlohmann's == takes 1, 1u and 1.0 as equal).
#pragma once

#include <cmath>
#include <optional>
#include <string_view>

#include "specshim/base/spec.h"

namespace specshim::test {

// reference_parse is nlohmann's strict parse of text, or nullopt where it
// refuses it. A repeated key keeps its first place and its last value there
// too. The one difference: nlohmann takes a NUL byte outside a string for the
// end of the input and ignores what follows; runc (Go's encoding/json)
// refuses it, and so does specshim, so here any NUL refuses (inside a string
// nlohmann refuses it as a control character anyway).
inline std::optional<Json> reference_parse(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return std::nullopt;
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// same_tree is true when a and b hold the same values of the same types, keys
// in the same order.
inline bool same_tree(const Json& a, const Json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto i = a.begin(), k = b.begin(); i != a.end(); ++i, ++k)
      if (i.key() != k.key() || !same_tree(i.value(), k.value())) return false;
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_tree(a[i], b[i])) return false;
    return true;
  }
  if (a.is_number_float()) {
    // Bit for bit: -0.0 and 0.0 differ, and no NaN can be parsed.
    double x = a.get<double>(), y = b.get<double>();
    return std::signbit(x) == std::signbit(y) && x == y;
  }
  return a == b;
}

}  // namespace specshim::test
