// SPDX-License-Identifier: Apache-2.0
// Text helpers for the readers of other programs' output (/proc files, a
// runtime's stderr) and of tenant lists: trimming characters off either end,
// and splitting a comma-separated list; and the scan every JSON reader and
// writer of specshim's runs over string contents.
#pragma once

#include <cstddef>
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

// json_plain_run returns how many bytes at the start of s a JSON string
// holds as they are: up to the first '"', '\\', control character or byte
// past ASCII (the start of an escape, the end, or UTF-8 to check). Sixteen
// bytes are tested at once: a spec's paths and a checkpoint's base64 answers
// are long runs.
std::size_t json_plain_run(std::string_view s);

}  // namespace specshim
