// SPDX-License-Identifier: Apache-2.0
// The passwd modifier's pure pieces (specshim/modifiers/passwd.h): /etc/passwd and
// /etc/group lines read and written, ids, names, fields and name templates
// checked. No I/O.
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>

#include "specshim/base/error.h"
#include "specshim/modifiers/passwd.h"

namespace specshim {
namespace passwd {
namespace {

// fields splits a line (without its '\n') at ':'; a trailing '\r' is dropped.
std::vector<std::string_view> fields(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string_view> out;
  for (;;) {
    std::size_t colon = line.find(':');
    out.push_back(line.substr(0, colon));
    if (colon == std::string_view::npos) return out;
    line.remove_prefix(colon + 1);
  }
}

bool canonical_name(std::string_view name) {
  return !name.empty() && name.find_first_of("#+- \t", 0) != 0 && name.find('\0') == std::string_view::npos;
}

// for_each_line calls f on every line of file, without its '\n'; f returns
// true to stop.
template <typename F>
bool any_line(std::string_view file, F f) {
  while (!file.empty()) {
    std::size_t nl = file.find('\n');
    if (f(file.substr(0, nl))) return true;
    if (nl == std::string_view::npos) break;
    file.remove_prefix(nl + 1);
  }
  return false;
}

}  // namespace

std::optional<std::uint32_t> parse_id(std::string_view s) {
  if (s.empty() || s.size() > 10 || (s.size() > 1 && s.front() == '0')) return std::nullopt;
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v > kMaxId) return std::nullopt;
  return static_cast<std::uint32_t>(v);
}

std::optional<PasswdEntry> parse_passwd_line(std::string_view line) {
  auto f = fields(line);
  if (f.size() != 7 || !canonical_name(f[0])) return std::nullopt;
  auto uid = parse_id(f[2]);
  auto gid = parse_id(f[3]);
  if (!uid || !gid) return std::nullopt;
  return PasswdEntry{std::string(f[0]), std::string(f[1]), *uid, *gid, std::string(f[4]),
                     std::string(f[5]), std::string(f[6])};
}

std::optional<GroupEntry> parse_group_line(std::string_view line) {
  auto f = fields(line);
  if (f.size() != 4 || !canonical_name(f[0])) return std::nullopt;
  auto gid = parse_id(f[2]);
  if (!gid) return std::nullopt;
  return GroupEntry{std::string(f[0]), std::string(f[1]), *gid, std::string(f[3])};
}

std::string format_passwd_line(const PasswdEntry& e) {
  return fmt::format("{}:{}:{}:{}:{}:{}:{}", e.name, e.password, e.uid, e.gid, e.gecos, e.home, e.shell);
}

std::string format_group_line(const GroupEntry& e) {
  return fmt::format("{}:{}:{}:{}", e.name, e.password, e.gid, e.members);
}

bool has_uid(std::string_view passwd_file, std::uint32_t uid) {
  return any_line(passwd_file, [&](std::string_view l) {
    auto e = parse_passwd_line(l);
    return e && e->uid == uid;
  });
}

std::optional<std::string> uid_name(std::string_view passwd_file, std::uint32_t uid) {
  std::optional<std::string> name;
  any_line(passwd_file, [&](std::string_view l) {
    auto e = parse_passwd_line(l);
    if (e && e->uid == uid) name = e->name;
    return name.has_value();
  });
  return name;
}

bool has_gid(std::string_view group_file, std::uint32_t gid) {
  return any_line(group_file, [&](std::string_view l) {
    auto e = parse_group_line(l);
    return e && e->gid == gid;
  });
}

bool name_taken(std::string_view file, std::string_view name) {
  return any_line(file, [&](std::string_view l) { return fields(l)[0] == name; });
}

std::string append_line(std::string_view file, std::string_view line) {
  std::string out(file);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += line;
  out += '\n';
  return out;
}

namespace {

std::optional<std::string> name_rule(std::string_view name, bool upper) {
  // The first character rule also makes an all-digit name impossible.
  if (name.empty()) return "is empty";
  if (contains_control(name)) return "contains a control character";
  if (name.size() > 32) return "is longer than 32 characters";
  auto letter = [upper](char c) { return (c >= 'a' && c <= 'z') || (upper && c >= 'A' && c <= 'Z'); };
  if (!(letter(name.front()) || name.front() == '_'))
    return upper ? "must start with a letter or '_'" : "must start with a lowercase letter or '_'";
  for (char c : name)
    if (!(letter(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
      return upper ? "may only hold a-z, A-Z, 0-9, '_', '.' and '-'" : "may only hold a-z, 0-9, '_', '.' and '-'";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> name_problem(std::string_view name) {
  return name_rule(name, false);
}

std::optional<std::string> group_name_problem(std::string_view name) {
  return name_rule(name, true);
}

std::optional<std::string> field_problem(std::string_view s) {
  if (contains_control(s)) return "contains a control character";
  if (s.find(':') != std::string_view::npos) return "contains ':'";
  if (s.size() > kMaxField) return "is longer than " + std::to_string(kMaxField) + " bytes";
  return std::nullopt;
}

std::optional<std::string> path_problem(std::string_view s) {
  if (auto why = field_problem(s)) return why;
  if (s.empty() || s.front() != '/') return "must be an absolute path";
  return std::nullopt;
}

std::string Template::expand(std::uint32_t id) const {
  std::string out = text;
  std::string value = std::to_string(id);
  for (std::size_t pos = 0; (pos = out.find(placeholder, pos)) != std::string::npos; pos += value.size())
    out.replace(pos, placeholder.size(), value);
  return out;
}

std::optional<std::string> Template::problem() const {
  for (std::size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
    std::size_t close = text.find('}', open);
    std::string_view used = std::string_view(text).substr(open, close == std::string::npos ? 1 : close - open + 1);
    if (used != placeholder)
      return fmt::format("unknown placeholder `{}`; only {} is allowed", printable(used), placeholder);
  }
  for (std::uint32_t id : {1u, kMaxId}) {
    std::string name = expand(id);
    if (auto why = name_problem(name)) return fmt::format("expands to `{}`, which {}", printable(name), *why);
  }
  return std::nullopt;
}

bool writable_by(const struct stat& st, std::uint32_t uid, std::uint32_t gid,
                 const std::vector<std::uint32_t>& additional_gids) {
  if (st.st_uid == uid) return st.st_mode & S_IWUSR;
  bool member =
      st.st_gid == gid || std::find(additional_gids.begin(), additional_gids.end(), st.st_gid) != additional_gids.end();
  if (member) return st.st_mode & S_IWGRP;
  return st.st_mode & S_IWOTH;
}

std::string printable(std::string_view s) {
  if (contains_control(s)) return fmt::format("<{} bytes holding control characters>", s.size());
  if (s.size() > 64) return std::string(s.substr(0, 61)) + "...";
  return std::string(s);
}

}  // namespace passwd

}  // namespace specshim
