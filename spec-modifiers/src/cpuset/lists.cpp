// SPDX-License-Identifier: Apache-2.0
// CPU and NUMA node lists as the kernel's cpuset files and the OCI spec
// write them ("0,2-5"): parsed strictly, formatted canonically.
#include <algorithm>
#include <iterator>

#include "specshim/base/error.h"
#include "specshim/modifiers/cpuset.h"

namespace specshim::cpuset {
namespace {

// quoted shows a list's text in a message when it is short and printable.
std::string quoted(std::string_view text) {
  if (text.size() > 64 || contains_control(text)) return "";
  return " `" + std::string(text) + "`";
}

// character names one byte of tenant text for a message.
std::string character(char c) {
  static const char* hex = "0123456789abcdef";
  auto u = static_cast<unsigned char>(c);
  if (u > 0x20 && u < 0x7f) return "`" + std::string(1, c) + "`";
  return std::string("byte 0x") + hex[u >> 4] + hex[u & 15];
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

IdSet parse_list(std::string_view field, std::string_view text, std::uint32_t limit) {
  std::string what(field);
  if (text.size() > kMaxListBytes) throw Error(what + ": longer than " + std::to_string(kMaxListBytes) + " bytes");
  auto fail = [&](const std::string& why) -> Error {
    return Error(what + quoted(text) + ": " + why + " (want ids and ranges such as 0,2-5)");
  };
  std::size_t i = 0;
  auto number = [&]() -> std::uint32_t {
    std::size_t start = i;
    std::uint64_t v = 0;
    while (i < text.size() && digit(text[i])) {
      v = v * 10 + static_cast<std::uint64_t>(text[i] - '0');
      if (v >= limit) {
        std::size_t end = i;
        while (end < text.size() && digit(text[end])) ++end;
        std::string_view n = text.substr(start, std::min<std::size_t>(end - start, 24));
        throw fail(std::string(n) + (end - start > 24 ? "..." : "") + " is above the largest id " +
                   std::to_string(limit - 1));
      }
      ++i;
    }
    if (i == start)
      throw fail(i == text.size() ? "ends where an id is expected"
                                  : "unexpected " + character(text[i]) + " at byte " + std::to_string(i));
    return static_cast<std::uint32_t>(v);
  };

  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
  while (i < text.size()) {
    std::uint32_t first = number();
    std::uint32_t last = first;
    if (i < text.size() && text[i] == '-') {
      ++i;
      last = number();
      if (last < first) throw fail("range " + std::to_string(first) + "-" + std::to_string(last) + " runs backwards");
    }
    ranges.emplace_back(first, last);
    if (i == text.size()) break;
    if (text[i] != ',') throw fail("unexpected " + character(text[i]) + " at byte " + std::to_string(i));
    if (++i == text.size()) throw fail("ends where an id is expected");
  }
  // Merged as ranges first, so a long list of wide ranges costs no more than its length.
  std::sort(ranges.begin(), ranges.end());
  IdSet out;
  for (auto [first, last] : ranges)
    for (std::uint64_t id = out.empty() ? first : std::max<std::uint64_t>(first, out.back() + 1ULL); id <= last; ++id)
      out.push_back(static_cast<std::uint32_t>(id));
  return out;
}

std::string format_list(const IdSet& ids) {
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

IdSet intersect(const IdSet& a, const IdSet& b) {
  IdSet out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

IdSet unite(const IdSet& a, const IdSet& b) {
  IdSet out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

}  // namespace specshim::cpuset
