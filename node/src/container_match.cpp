// SPDX-License-Identifier: Apache-2.0
#include "specshim/node/container_match.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>
#include <charconv>

#include "specshim/base/error.h"
#include "specshim/node/pod_identity.h"

namespace specshim {
namespace {

bool glob_matches(const std::string& glob, const std::string& value) {
  return ::fnmatch(glob.c_str(), value.c_str(), 0) == 0;
}

// process_uid is process.user.uid as runc reads it: absent is 0; a value
// that is not an id matches no range.
std::optional<std::uint32_t> process_uid(const Spec& spec) {
  const Json* uid = spec.find({"process", "user", "uid"});
  if (!uid) return 0;
  if (!uid->is_number_unsigned() || uid->get<std::uint64_t>() > 0xFFFFFFFFull) return std::nullopt;
  return static_cast<std::uint32_t>(uid->get<std::uint64_t>());
}

std::optional<std::uint32_t> parse_uint(std::string_view s) {
  std::uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// parse_range reads "N" or "N-M" (N <= M).
std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_range(std::string_view s) {
  auto dash = s.find('-');
  auto lo = parse_uint(s.substr(0, dash));
  auto hi = dash == std::string_view::npos ? lo : parse_uint(s.substr(dash + 1));
  if (!lo || !hi || *lo > *hi) return std::nullopt;
  return std::pair{*lo, *hi};
}

std::string prefixed(std::string_view who, const std::string& what) {
  return who.empty() ? what : std::string(who) + ": " + what;
}

}  // namespace

bool ContainerMatch::holds(const Spec& spec) const {
  if (kind) {
    // Containers created outside CRI (ctr, docker-in-docker siblings) carry
    // no kind annotation; they are not sandboxes, so "container" matches them.
    bool sandbox = pod_identity::kind_of(spec) == ContainerKind::sandbox;
    if (sandbox != (*kind == ContainerKind::sandbox)) return false;
  }
  for (const auto& [key, glob] : annotations) {
    auto value = spec.annotation(key);
    if (!value || pod_identity::foreign_key(spec, key) || !glob_matches(glob, *value)) return false;
  }
  if (!namespaces.empty()) {
    auto ns = pod_identity::pod_namespace(spec);
    if (!ns || std::none_of(namespaces.begin(), namespaces.end(), [&](const auto& g) { return glob_matches(g, *ns); }))
      return false;
  }
  if (!uids.empty()) {
    auto uid = process_uid(spec);
    if (!uid ||
        std::none_of(uids.begin(), uids.end(), [&](const auto& r) { return r.first <= *uid && *uid <= r.second; }))
      return false;
  }
  return true;
}

std::string ContainerMatch::describe() const {
  if (empty()) return "every container";
  std::vector<std::string> parts;
  if (!namespaces.empty()) parts.push_back(fmt::format("namespaces {}", fmt::join(namespaces, ", ")));
  if (!uids.empty()) {
    std::vector<std::string> r;
    for (auto [lo, hi] : uids) r.push_back(lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi));
    parts.push_back(fmt::format("uids {}", fmt::join(r, ", ")));
  }
  for (const auto& [key, glob] : annotations) parts.push_back(fmt::format("annotation {} = {}", key, glob));
  if (kind) parts.push_back(*kind == ContainerKind::sandbox ? "sandboxes only" : "containers only (no sandboxes)");
  return fmt::format("{}", fmt::join(parts, "; "));
}

ContainerMatch read_container_match(config::Section& t, std::string_view who) {
  ContainerMatch match;
  auto m = t.table("match");
  if (!m) return match;
  if (auto a = m->table("annotations")) {
    for (const auto& key : a->keys()) {
      auto glob = a->string(key);
      if (contains_control(key)) a->fail(key, prefixed(who, "control character in an annotation key"));
      if (!valid_glob(*glob))
        a->fail(key, prefixed(who, "`" + *glob +
                                       "` is not a glob (an unterminated [, a trailing \\ or a control character)"));
      match.annotations[key] = *glob;
    }
    a->finish();
  }
  if (auto kind = m->string("container-kind")) {
    if (*kind == "container")
      match.kind = ContainerKind::container;
    else if (*kind == "sandbox")
      match.kind = ContainerKind::sandbox;
    else
      m->fail("container-kind", prefixed(who, "`" + *kind + "` is not container or sandbox"));
  }
  if (auto namespaces = m->strings("namespaces")) {
    for (const auto& g : *namespaces)
      if (g.empty() || !valid_glob(g)) m->fail("namespaces", prefixed(who, "`" + g + "` is not a namespace glob"));
    if (namespaces->empty()) m->fail("namespaces", prefixed(who, "an empty list matches no container; leave it out"));
    match.namespaces = *namespaces;
  }
  if (auto uids = m->strings("uids")) {
    for (const auto& text : *uids) {
      auto range = parse_range(text);
      if (!range) m->fail("uids", prefixed(who, "`" + text + "` is not a uid or a range LOW-HIGH (LOW <= HIGH)"));
      match.uids.push_back(*range);
    }
    if (uids->empty()) m->fail("uids", prefixed(who, "an empty list matches no container; leave it out"));
  }
  m->finish();
  return match;
}

bool valid_glob(std::string_view g) {
  if (contains_control(g)) return false;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (g[i] == '\\') {
      if (++i == g.size()) return false;
    } else if (g[i] == '[') {
      // A bracket expression: an optional ! or ^, then a ] taken literally
      // when first, classes like [:digit:], up to the closing ].
      std::size_t j = i + 1;
      if (j < g.size() && (g[j] == '!' || g[j] == '^')) ++j;
      if (j < g.size() && g[j] == ']') ++j;
      for (; j < g.size() && g[j] != ']'; ++j) {
        if (g.compare(j, 2, "[:") == 0) {
          auto end = g.find(":]", j + 2);
          if (end == std::string_view::npos) return false;
          j = end + 1;
        }
      }
      if (j == g.size()) return false;
      i = j;
    }
  }
  return true;
}

}  // namespace specshim
