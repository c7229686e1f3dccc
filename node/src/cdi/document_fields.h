// SPDX-License-Identifier: Apache-2.0
// Decoding a Node tree (cdi_document.h) strictly, field by field, with the
// line of every error: for CDI spec files and specshim's desired-state file.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cdi_document.h"
#include "specshim/base/error.h"
#include "specshim/node/cdi.h"

namespace specshim::cdi {

[[noreturn]] inline void fail(int line, const std::string& where, const std::string& what) {
  throw Error("line " + std::to_string(line) + ": " + (where.empty() ? "" : where + ": ") + what);
}

inline std::string field_path(const std::string& where, std::string_view field) {
  return where.empty() ? std::string(field) : where + "." + std::string(field);
}

inline std::string item_path(const std::string& where, std::size_t i) {
  return where + "[" + std::to_string(i) + "]";
}

inline std::string describe(const Node& n) {
  switch (n.type) {
    case Node::Type::null:
      return "null";
    case Node::Type::plain:
    case Node::Type::string:
      return "string " + quote(n.text);
    case Node::Type::integer:
    case Node::Type::floating:
      return "number " + n.text;
    case Node::Type::boolean:
      return n.text;
    case Node::Type::sequence:
      return "a list";
    case Node::Type::mapping:
      return "an object";
  }
  return "?";
}

inline bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
           return lower(x) == lower(y);
         });
}

// for_fields walks an object's members, matching keys to the known field
// names as Go's encoding/json does (exact, else ASCII case-insensitive).
// Unknown fields and a field given twice are errors. null is an empty object.
template <typename F>
void for_fields(const Node& n, const std::string& where, std::initializer_list<std::string_view> known, F&& f) {
  if (n.type == Node::Type::null) return;
  if (n.type != Node::Type::mapping) fail(n.line, where, "want an object, got " + describe(n));
  std::vector<std::string_view> seen;
  for (std::size_t i = 0; i < n.keys.size(); ++i) {
    const std::string& key = n.keys[i];
    auto match = std::find(known.begin(), known.end(), key);
    if (match == known.end())
      match = std::find_if(known.begin(), known.end(), [&](std::string_view k) { return iequals(k, key); });
    if (match == known.end()) fail(n.key_lines[i], where, "unknown field " + quote(key));
    if (std::find(seen.begin(), seen.end(), *match) != seen.end())
      fail(n.key_lines[i], where, "field " + quote(*match) + " given twice");
    seen.push_back(*match);
    f(*match, n.values[i], field_path(where, *match));
  }
}

// yaml_int reads a plain scalar as go-yaml v2 does: underscores dropped, an
// optional sign, then Go's base prefixes (0x, 0o, 0b, a leading 0 = octal).
inline std::optional<__int128> yaml_int(std::string_view text) {
  std::string s;
  for (char c : text)
    if (c != '_') s += c;
  std::size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  int base = 10;
  if (s.size() - i > 1 && s[i] == '0') {
    char p = static_cast<char>(s[i + 1] | 0x20);
    if (p == 'x')
      base = 16, i += 2;
    else if (p == 'o')
      base = 8, i += 2;
    else if (p == 'b')
      base = 2, i += 2;
    else
      base = 8, i += 1;
  }
  if (i >= s.size()) return std::nullopt;
  __int128 v = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    v = v * base + d;
    if (v > (static_cast<__int128>(1) << 64)) return std::nullopt;
  }
  return negative ? -v : v;
}

inline std::optional<bool> yaml_bool(std::string_view s) {
  for (std::string_view t : {"y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"})
    if (s == t) return true;
  for (std::string_view f : {"n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"})
    if (s == f) return false;
  return std::nullopt;
}

inline std::string int128_to_string(__int128 v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  unsigned __int128 u = negative ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  std::string out;
  for (; u; u /= 10) out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
  return negative ? "-" + out : out;
}

// get_string: a YAML plain scalar that YAML reads as an integer or a boolean
// becomes its canonical text, as upstream's YAML-to-JSON step does.
inline std::optional<std::string> get_string(const Node& n, const std::string& where) {
  switch (n.type) {
    case Node::Type::null:
      return std::nullopt;
    case Node::Type::string:
      return n.text;
    case Node::Type::plain:
      if (auto i = yaml_int(n.text)) return int128_to_string(*i);
      if (auto b = yaml_bool(n.text)) return *b ? "true" : "false";
      return n.text;
    default:
      fail(n.line, where, "want a string, got " + describe(n));
  }
}

inline std::optional<std::int64_t> get_int(const Node& n, const std::string& where, std::int64_t min,
                                           std::int64_t max) {
  std::optional<__int128> v;
  if (n.type == Node::Type::null) return std::nullopt;
  if (n.type == Node::Type::integer || n.type == Node::Type::plain) v = yaml_int(n.text);
  if (!v) fail(n.line, where, "want an integer, got " + describe(n));
  if (*v < min || *v > max)
    fail(n.line, where, n.text + " is out of range (" + std::to_string(min) + " to " + std::to_string(max) + ")");
  return static_cast<std::int64_t>(*v);
}

inline std::optional<std::uint32_t> get_u32(const Node& n, const std::string& where) {
  auto v = get_int(n, where, 0, UINT32_MAX);
  if (!v) return std::nullopt;
  return static_cast<std::uint32_t>(*v);
}

inline bool get_bool(const Node& n, const std::string& where) {
  if (n.type == Node::Type::null) return false;
  std::optional<bool> v;
  if (n.type == Node::Type::boolean) v = n.text == "true";
  if (n.type == Node::Type::plain) v = yaml_bool(n.text);
  if (!v) fail(n.line, where, "want true or false, got " + describe(n));
  return *v;
}

template <typename F>
void for_items(const Node& n, const std::string& where, F&& f) {
  if (n.type == Node::Type::null) return;
  if (n.type != Node::Type::sequence) fail(n.line, where, "want a list, got " + describe(n));
  for (std::size_t i = 0; i < n.items.size(); ++i) f(n.items[i], item_path(where, i));
}

// for_objects is for_items over a list of objects; a null item is an error
// (upstream would store a nil pointer and crash on it later).
template <typename F>
void for_objects(const Node& n, const std::string& where, F&& f) {
  for_items(n, where, [&](const Node& item, const std::string& at) {
    if (item.type != Node::Type::mapping) fail(item.line, at, "want an object, got " + describe(item));
    f(item, at);
  });
}

inline std::vector<std::string> get_strings(const Node& n, const std::string& where) {
  std::vector<std::string> out;
  for_items(n, where, [&](const Node& item, const std::string& at) {
    auto s = get_string(item, at);
    if (!s) fail(item.line, at, "want a string, got null");
    out.push_back(*s);
  });
  return out;
}

inline std::map<std::string, std::string> get_string_map(const Node& n, const std::string& where) {
  std::map<std::string, std::string> out;
  if (n.type == Node::Type::null) return out;
  if (n.type != Node::Type::mapping) fail(n.line, where, "want an object, got " + describe(n));
  for (std::size_t i = 0; i < n.keys.size(); ++i)
    out[n.keys[i]] = get_string(n.values[i], field_path(where, n.keys[i])).value_or("");
  return out;
}

}  // namespace specshim::cdi
