// SPDX-License-Identifier: Apache-2.0
// Text helpers for the readers of other programs' output (/proc files, a
// runtime's stderr) and of tenant lists: trimming characters off either end,
// and splitting a comma-separated list.
#pragma once

#include <string_view>
#include <vector>

namespace specshim {

// trim drops every character in chars from both ends of s; the two-set form
// drops those in front from its start and those in back from its end.
std::string_view trim(std::string_view s, std::string_view chars);
std::string_view trim(std::string_view s, std::string_view front, std::string_view back);

// trim_end drops every character in chars from the end of s.
std::string_view trim_end(std::string_view s, std::string_view chars);

// split_list splits value at every ',' and trims the characters in blanks off
// each item; empty items are dropped. The items point into value.
std::vector<std::string_view> split_list(std::string_view value, std::string_view blanks);

}  // namespace specshim
