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

}  // namespace specshim
