// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/text.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

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

std::size_t json_plain_run(std::string_view s) {
  static constexpr auto plain = [] {
    std::array<bool, 256> t{};
    for (int c = 0x20; c < 0x80; ++c) t[c] = c != '"' && c != '\\';
    return t;
  }();
  // A GCC vector (SSE2 on x86-64, NEON on arm64): a lane compares to all
  // ones when its byte is special. Below 0x20 and past ASCII are one signed
  // comparison.
  using Bytes = signed char __attribute__((vector_size(16)));
  static_assert(std::endian::native == std::endian::little);
  std::size_t i = 0;
  for (; i + 16 <= s.size(); i += 16) {
    Bytes b;
    std::memcpy(&b, s.data() + i, 16);
    Bytes special = (b < 0x20) | (b == '"') | (b == '\\');
    std::uint64_t half[2];
    std::memcpy(half, &special, 16);
    // The first special lane is the lowest set byte (little-endian lanes).
    if (half[0]) return i + static_cast<std::size_t>(std::countr_zero(half[0])) / 8;
    if (half[1]) return i + 8 + static_cast<std::size_t>(std::countr_zero(half[1])) / 8;
  }
  while (i < s.size() && plain[static_cast<unsigned char>(s[i])]) ++i;
  return i;
}

}  // namespace specshim
