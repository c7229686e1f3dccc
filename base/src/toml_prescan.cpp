// SPDX-License-Identifier: Apache-2.0
#include "toml_prescan.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace specshim::detail {
namespace {

// skip_string moves i from a string's opening quote to its last closing
// quote, counting the newlines of multi-line strings into line. It returns
// false when toml++ would test non-ASCII for whitespace inside the string:
// after a backslash in a multi-line basic string, toml++ skips whitespace and
// newlines (a line-ending backslash) by testing each character up to the
// first that is not whitespace.
bool skip_string(std::string_view t, std::size_t& i, std::size_t& line) {
  const char q = t[i];
  const std::string triple(3, q);
  bool multi = t.substr(i, 3) == triple;
  for (i += multi ? 3 : 1; i < t.size(); ++i) {
    if (t[i] == '\n') {
      if (!multi) break;
      ++line;
    }
    if (q == '"' && t[i] == '\\') {
      if (multi) {
        std::size_t j = i + 1;
        while (j < t.size() && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r' || t[j] == '\n')) ++j;
        if (j < t.size() && static_cast<unsigned char>(t[j]) >= 0x80) return false;
      }
      if (++i < t.size() && t[i] == '\n') ++line;
      continue;
    }
    if (t[i] == q && (!multi || t.substr(i, 3) == triple)) break;
  }
  if (multi && i < t.size()) {
    i += 2;
    while (i + 1 < t.size() && t[i + 1] == q) ++i;  // up to two quotes may end the string's content
  }
  return true;
}

// plain reports whether a comment holds only what TOML allows in any
// comment: tab and printable ASCII. Removing it cannot change what toml++
// accepts. Eight bytes at a time: comments are nearly all of the file.
bool plain(std::string_view comment) {
  constexpr std::uint64_t k01 = 0x0101010101010101, k80 = 0x8080808080808080;
  std::size_t i = 0;
  for (; i + 8 <= comment.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, comment.data() + i, 8);
    if (w & k80) return false;  // a byte >= 0x80
    // Every byte is below 0x80 now, so no sum below carries into the next byte.
    std::uint64_t printable = (w + 0x60 * k01) & k80;            // >= 0x20
    std::uint64_t del = (w + k01) & k80;                         // == 0x7f
    std::uint64_t tab = ~((w ^ 0x09 * k01) + 0x7f * k01) & k80;  // == '\t'
    if ((k80 & ~printable & ~tab) | del) return false;
  }
  for (; i < comment.size(); ++i) {
    auto c = static_cast<unsigned char>(comment[i]);
    if ((c < 0x20 && c != '\t') || c >= 0x7f) return false;
  }
  return true;
}

TomlPrescan refuse(std::size_t line) {
  TomlPrescan out;
  out.bare_non_ascii_line = line;
  return out;
}

}  // namespace

// Bare non-ASCII text is never valid TOML (bare keys and values are ASCII),
// and toml++ 3.3 reaches __builtin_unreachable() on some of it (its non-ASCII
// whitespace table), so it is refused before toml++ sees it.
//
// The scan follows toml++'s tokens: a quote opens a string only where a key or value starts, not inside a bare
// value, which runs to whitespace, ',', ']', '}' or '#' (`x = 0['é'` is one
// bare value to toml++), nor inside a bare key, which runs to whitespace, '.',
// '=' or ']'. Where the two could disagree the scan treats text as bare, so
// it may refuse an odd but valid file; it never lets bare non-ASCII through.
// Such a disagreement is always on a line toml++ refuses before any comment
// on it, so a removed comment never hides text toml++ would have read:
// Document::parse reads the whole file again for the message of any error.
TomlPrescan prescan_toml(std::string_view t) {
  TomlPrescan out;
  out.text.reserve(t.size());
  std::size_t kept = 0;  // t[kept..] is not yet in out.text
  std::size_t line = 1;
  std::vector<char> nest;  // open arrays '[' and inline tables '{'
  bool key = true;         // the next token is a key, not a value
  bool header = false;     // inside a [table] or [[table]] header
  bool bare = false;       // inside a bare key or value
  bool bare_key = false;   // ... which is a key
  for (std::size_t i = 0; i < t.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(t[i]);
    if (c == '\n') {
      ++line;
      bare = header = false;
      key = nest.empty() || nest.back() == '{';
      continue;
    }
    if (c == '#') {
      std::size_t end = std::min(t.find('\n', i), t.size());
      std::string_view comment = t.substr(i + 1, end - i - 1);
      if (end < t.size() && comment.ends_with('\r')) comment.remove_suffix(1);  // a CRLF line
      // A lone CR just before the comment is toml++'s error to report:
      // without the comment it would meet the LF and read as a CRLF line.
      if (plain(comment) && (i == 0 || t[i - 1] != '\r')) {
        out.text.append(t.substr(kept, i - kept));
        kept = i + 1 + comment.size();
      }
      i = end - 1;
      bare = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      bare = false;
      continue;
    }
    if (bare) {
      bool ends = bare_key ? (c == '.' || c == '=' || c == ']') : (c == ',' || c == ']' || c == '}');
      if (!ends) {
        if (c >= 0x80) return refuse(line);
        continue;
      }
      bare = false;
    }
    switch (c) {
      case '"':
      case '\'':
        if (!skip_string(t, i, line)) return refuse(line);
        break;
      case '=':
        key = false;
        break;
      case ',':
        key = !nest.empty() && nest.back() == '{';
        break;
      case '{':
        nest.push_back('{');
        key = true;
        break;
      case '[':
        if (key && nest.empty())
          header = true;
        else
          nest.push_back('['), key = false;
        break;
      case '}':
      case ']':
        if (!header && !nest.empty()) nest.pop_back();
        break;
      case '.':
        break;
      default:
        if (c >= 0x80) return refuse(line);
        bare = true;
        bare_key = key;
    }
  }
  out.text.append(t.substr(kept));
  return out;
}

}  // namespace specshim::detail
