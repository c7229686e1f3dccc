// SPDX-License-Identifier: Apache-2.0
// CDI name syntax: vendor, class and device names, and "VENDOR/CLASS=NAME".
// Ref: container-device-interface pkg/parser/parser.go@v1.1.0. Unlike v1.1.0,
// one-character names are fine here (upstream slices [1:0] and panics).
#include "specshim/node/cdi.h"

namespace specshim::cdi {
namespace {

bool is_letter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool is_alnum(char c) {
  return is_letter(c) || (c >= '0' && c <= '9');
}

std::string bad_char(char c, std::string_view name) {
  return "invalid character " + quote_char(c) + " in " + quote(name);
}

// check_name holds the shared shape: a first-character rule, a set of extra
// characters allowed in the middle, and a letter or digit at the end.
std::string check_name(std::string_view name, bool digit_first, std::string_view middle_extra) {
  if (name.empty()) return "empty name";
  if (!(digit_first ? is_alnum(name.front()) : is_letter(name.front())))
    return quote(name) + (digit_first ? " should start with a letter or digit" : " should start with a letter");
  for (std::size_t i = 1; i + 1 < name.size(); ++i) {
    char c = name[i];
    if (!is_alnum(c) && middle_extra.find(c) == std::string_view::npos) return bad_char(c, name);
  }
  if (!is_alnum(name.back())) return quote(name) + " should end with a letter or digit";
  return "";
}

}  // namespace

std::string check_vendor(std::string_view vendor) {
  return check_name(vendor, false, "_.-");
}
std::string check_class(std::string_view cls) {
  return check_name(cls, false, "_.-");
}
std::string check_device_name(std::string_view name) {
  return check_name(name, true, "_.-:");
}

std::pair<std::string_view, std::string_view> split_kind(std::string_view kind) {
  auto slash = kind.find('/');
  if (slash == std::string_view::npos) return {std::string_view(), kind};
  return {kind.substr(0, slash), kind.substr(slash + 1)};
}

std::optional<QualifiedName> parse_qualified_name(std::string_view s, std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<QualifiedName> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  auto eq = s.find('=');
  if (eq == std::string_view::npos) return fail("missing \"=NAME\"");
  std::string_view qualifier = s.substr(0, eq);
  auto [vendor, cls] = split_kind(qualifier);
  std::string_view name = s.substr(eq + 1);
  if (qualifier.find('/') == std::string_view::npos && !qualifier.empty()) return fail("missing class");
  if (vendor.empty()) return fail("missing vendor");
  if (cls.empty()) return fail("missing class");
  if (name.empty()) return fail("missing device name");
  if (auto e = check_vendor(vendor); !e.empty()) return fail("invalid vendor: " + e);
  if (auto e = check_class(cls); !e.empty()) return fail("invalid class: " + e);
  if (auto e = check_device_name(name); !e.empty()) return fail("invalid device name: " + e);
  return QualifiedName{std::string(vendor), std::string(cls), std::string(name)};
}

std::string quote(std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string quote_char(char c) {
  std::string q = quote(std::string_view(&c, 1));
  return "'" + q.substr(1, q.size() - 2) + "'";
}

}  // namespace specshim::cdi
