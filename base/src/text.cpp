// SPDX-License-Identifier: Apache-2.0
#include "specshim/text.h"

#include <algorithm>

namespace specshim {

std::string_view trim(std::string_view s, std::string_view chars) {
  return trim(s, chars, chars);
}

std::string_view trim(std::string_view s, std::string_view front, std::string_view back) {
  s.remove_prefix(std::min(s.find_first_not_of(front), s.size()));
  return trim_end(s, back);
}

std::string_view trim_end(std::string_view s, std::string_view chars) {
  // find_last_not_of is npos when every character is in chars: npos + 1 is 0.
  return s.substr(0, s.find_last_not_of(chars) + 1);
}

std::vector<std::string_view> split_list(std::string_view value, std::string_view blanks) {
  std::vector<std::string_view> out;
  for (;;) {
    std::size_t comma = value.find(',');
    std::string_view item = trim(value.substr(0, comma), blanks);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string_view::npos) return out;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace specshim
