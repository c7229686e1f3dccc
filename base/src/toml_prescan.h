// SPDX-License-Identifier: Apache-2.0
// prescan_toml: the one pass over a config file before toml++ reads it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace specshim::detail {

struct TomlPrescan {
  // The 1-based line of the first byte >= 0x80 that toml++ would read
  // outside a string or comment, or 0. When it is set, text is empty.
  std::size_t bare_non_ascii_line = 0;
  // The file without the text of its comments: every line and every column
  // before a comment stays where it was, so toml++ reports the same
  // positions. A comment toml++ could refuse (a control character, any
  // byte >= 0x80) is kept for toml++ to judge.
  std::string text;
};

// prescan_toml scans a config file once. Why: toml++ reads ~150 instructions
// a character, comments included, and the config specshim ships is 11 KiB,
// nearly all of it comments; every exec of specshim, passthrough included,
// reads it. Bare non-ASCII text is found in the same pass (toml++ 3.3
// reaches __builtin_unreachable() on some of it).
TomlPrescan prescan_toml(std::string_view text);

}  // namespace specshim::detail
