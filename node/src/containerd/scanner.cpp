// SPDX-License-Identifier: Apache-2.0
// The line scanner of containerd's TOML (containerd_config.h): one record per
// table header and key/value line, as the installer's awk scanner read them.
#include <algorithm>
#include <string>
#include <string_view>

#include "specshim/node/containerd_config.h"

namespace specshim::node::containerd_config {
namespace {

char at(std::string_view s, std::size_t i) {
  return i < s.size() ? s[i] : '\0';
}

std::string_view part(std::string_view s, std::size_t pos, std::size_t n) {
  return pos >= s.size() ? std::string_view() : s.substr(pos, n);
}

std::size_t skipws(std::string_view s, std::size_t i) {
  while (at(s, i) == ' ' || at(s, i) == '\t') ++i;
  return i;
}

// closing_quote is where the basic string opened at s[open] ends (its
// closing '"', backslash escapes skipped), or s's size when it does not.
std::size_t closing_quote(std::string_view s, std::size_t open) {
  std::size_t j = open + 1;
  for (; j < s.size(); ++j) {
    if (s[j] == '\\') {
      ++j;
      continue;
    }
    if (s[j] == '"') break;
  }
  return std::min(j, s.size());
}

bool bare(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Key is a dotted key as parse_key reads it: canonical, its segment count,
// and where the text after it (blanks skipped) starts.
struct Key {
  std::string text;
  int segments = 0;
  std::size_t end = 0;
};

bool parse_key(std::string_view s, std::size_t i, Key& key) {
  key = Key{};
  const std::size_t n = s.size();
  while (true) {
    i = skipws(s, i);
    char c = at(s, i);
    std::string_view seg;
    if (c == '"') {
      std::size_t j = closing_quote(s, i);
      if (j >= n) return false;
      seg = s.substr(i + 1, j - i - 1);
      i = j + 1;
    } else if (c == '\'') {
      auto j = s.find('\'', i + 1);
      if (j == std::string_view::npos) return false;
      seg = s.substr(i + 1, j - i - 1);
      i = j + 1;
    } else {
      std::size_t j = i;
      while (j < n && bare(s[j])) ++j;
      if (j == i) return false;
      seg = s.substr(i, j - i);
      i = j;
    }
    key.text += (key.segments ? ".\"" : "\"") + std::string(seg) + "\"";
    ++key.segments;
    i = skipws(s, i);
    if (at(s, i) != '.') break;
    ++i;
  }
  key.end = i;
  return true;
}

// Scanner carries what spans lines: an open multi-line string's delimiter
// and the depth of open arrays.
struct Scanner {
  std::string ml;
  int depth = 0;

  // value walks s from i and returns where a comment starts (or s's end).
  std::size_t value(std::string_view s, std::size_t i) {
    const std::size_t n = s.size();
    while (i < n) {
      if (!ml.empty()) {
        auto j = s.find(ml, i);
        if (j == std::string_view::npos) return n;
        i = j + 3;
        ml.clear();
        continue;
      }
      char c = s[i];
      if (c == '#') return i;
      if (part(s, i, 3) == "\"\"\"" || part(s, i, 3) == "'''") {
        ml = std::string(s.substr(i, 3));
        i += 3;
        continue;
      }
      if (c == '"') {
        i = closing_quote(s, i) + 1;
        continue;
      }
      if (c == '\'') {
        auto j = s.find('\'', i + 1);
        i = j == std::string_view::npos ? n : j + 1;
        continue;
      }
      if (c == '[') ++depth;
      if (c == ']') --depth;
      ++i;
    }
    return n;
  }
};

}  // namespace

std::vector<std::string> lines(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    out.emplace_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::vector<Record> scan(std::string_view text) {
  std::vector<Record> out;
  Scanner sc;
  std::string table;
  int nr = 0;
  for (const auto& line : lines(text)) {
    ++nr;
    std::string_view s = line;
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    if (!sc.ml.empty() || sc.depth > 0) {
      sc.value(s, 0);
      continue;
    }
    std::size_t i = skipws(s, 0);
    char c = at(s, i);
    if (c == '\0' || c == '#') continue;
    Key key;
    if (c == '[') {
      bool arr = part(s, i, 2) == "[[";
      std::size_t width = arr ? 2 : 1;
      if (!parse_key(s, i + width, key) || part(s, key.end, width) != (arr ? "]]" : "]")) {
        out.push_back({nr, Kind::bad, "", "", 0, ""});
        continue;
      }
      char after = at(s, skipws(s, key.end + width));
      if (after != '\0' && after != '#') {
        out.push_back({nr, Kind::bad, "", "", 0, ""});
        continue;
      }
      table = key.text;
      out.push_back({nr, arr ? Kind::array : Kind::table, table, "", 0, ""});
      continue;
    }
    if (!parse_key(s, i, key) || at(s, key.end) != '=') {
      out.push_back({nr, Kind::bad, "", "", 0, ""});
      continue;
    }
    std::size_t j = skipws(s, key.end + 1);
    std::size_t e = sc.value(s, j);
    std::string v(part(s, j, e > j ? e - j : 0));
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
    out.push_back({nr, Kind::kv, table, key.text, key.segments, v});
  }
  return out;
}

std::optional<std::string> toml_string(std::string_view raw) {
  if (raw.size() < 2) return std::nullopt;
  char q = raw.front();
  if ((q != '"' && q != '\'') || raw.back() != q) return std::nullopt;
  std::string_view v = raw.substr(1, raw.size() - 2);
  if (q == '"' && v.find_first_of("\\\"") != std::string_view::npos) return std::nullopt;
  if (q == '\'' && v.find('\'') != std::string_view::npos) return std::nullopt;
  return std::string(v);
}

bool under(std::string_view a, std::string_view b) {
  return a == b || (a.size() > b.size() && a.substr(0, b.size()) == b && a[b.size()] == '.');
}

bool above(std::string_view a, std::string_view b) {
  return a.empty() || (b.size() > a.size() && b.substr(0, a.size()) == a && b[a.size()] == '.');
}

}  // namespace specshim::node::containerd_config
