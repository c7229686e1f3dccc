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

bool any_matches(const std::vector<std::string>& globs, const std::string& value) {
  return std::any_of(globs.begin(), globs.end(), [&](const auto& g) { return glob_matches(g, value); });
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

// annotation_key reports whether k is a Kubernetes annotation key: a name
// (1-63 letters, digits, '-', '_', '.', starting and ending with a letter or
// digit), optionally after a DNS subdomain prefix and '/'.
bool annotation_key(std::string_view k) {
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  auto name = [&](std::string_view n) {
    return !n.empty() && n.size() <= 63 && alnum(n.front()) && alnum(n.back()) &&
           std::all_of(n.begin(), n.end(), [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
  };
  auto slash = k.find('/');
  if (slash == std::string_view::npos) return name(k);
  std::string_view prefix = k.substr(0, slash);
  return !prefix.empty() && prefix.size() <= 253 && name(k.substr(slash + 1)) &&
         std::all_of(prefix.begin(), prefix.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'; });
}

void read_annotations(config::Section& m, std::string_view who, MatchConditions& c) {
  auto a = m.table("annotations");
  if (!a) return;
  for (const auto& key : a->keys()) {
    auto glob = a->string(key);
    if (contains_control(key)) a->fail(key, prefixed(who, "control character in an annotation key"));
    if (!valid_glob(*glob))
      a->fail(key,
              prefixed(who, "`" + *glob + "` is not a glob (an unterminated [, a trailing \\ or a control character)"));
    c.annotations[key] = *glob;
  }
  a->finish();
}

void read_kind(config::Section& m, std::string_view who, MatchConditions& c) {
  auto kind = m.string("container-kind");
  if (!kind) return;
  if (*kind == "container")
    c.kind = ContainerKind::container;
  else if (*kind == "sandbox")
    c.kind = ContainerKind::sandbox;
  else
    m.fail("container-kind", prefixed(who, "`" + *kind + "` is not container or sandbox"));
}

// read_globs reads a list of globs of which one must match: `namespaces`, `images`.
std::vector<std::string> read_globs(config::Section& m, std::string_view key, std::string_view who,
                                    std::string_view noun) {
  auto globs = m.strings(key);
  if (!globs) return {};
  for (const auto& g : *globs)
    if (g.empty() || !valid_glob(g)) m.fail(key, prefixed(who, fmt::format("`{}` is not {} glob", g, noun)));
  if (globs->empty()) m.fail(key, prefixed(who, "an empty list matches no container; leave it out"));
  return *globs;
}

void read_uids(config::Section& m, std::string_view who, MatchConditions& c) {
  auto uids = m.strings("uids");
  if (!uids) return;
  for (const auto& text : *uids) {
    auto range = parse_range(text);
    if (!range) m.fail("uids", prefixed(who, "`" + text + "` is not a uid or a range LOW-HIGH (LOW <= HIGH)"));
    c.uids.push_back(*range);
  }
  if (uids->empty()) m.fail("uids", prefixed(who, "an empty list matches no container; leave it out"));
}

// read_conditions reads the condition keys of a `match` table or of its
// `not` table; the caller finishes the table.
MatchConditions read_conditions(config::Section& m, std::string_view who) {
  MatchConditions c;
  read_annotations(m, who, c);
  read_kind(m, who, c);
  c.namespaces = read_globs(m, "namespaces", who, "a namespace");
  read_uids(m, who, c);
  c.images = read_globs(m, "images", who, "an image");
  return c;
}

// read_not reads the `not` table of m: conditions of their own, never none,
// and no `not` again.
std::optional<MatchConditions> read_not(config::Section& m, std::string_view who) {
  auto n = m.table("not");
  if (!n) return std::nullopt;
  if (n->has("not")) n->fail("not", prefixed(who, "`not` does not nest; write what to exclude in the one `not` table"));
  MatchConditions c = read_conditions(*n, who);
  n->finish();
  if (c.empty()) m.fail("not", prefixed(who, "an empty `not` table would exclude every container; leave it out"));
  return c;
}

}  // namespace

bool MatchConditions::holds(const Spec& spec) const {
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
    if (!ns || !any_matches(namespaces, *ns)) return false;
  }
  if (!uids.empty()) {
    auto uid = process_uid(spec);
    if (!uid ||
        std::none_of(uids.begin(), uids.end(), [&](const auto& r) { return r.first <= *uid && *uid <= r.second; }))
      return false;
  }
  if (!images.empty()) {
    // A container with no image reference (outside CRI, a sandbox) never matches.
    auto refs = pod_identity::image_references(spec);
    if (std::none_of(refs.begin(), refs.end(), [&](const auto& ref) { return any_matches(images, ref); })) return false;
  }
  return true;
}

std::string MatchConditions::describe() const {
  std::vector<std::string> parts;
  if (!namespaces.empty()) parts.push_back(fmt::format("namespaces {}", fmt::join(namespaces, ", ")));
  if (!uids.empty()) {
    std::vector<std::string> r;
    for (auto [lo, hi] : uids) r.push_back(lo == hi ? std::to_string(lo) : fmt::format("{}-{}", lo, hi));
    parts.push_back(fmt::format("uids {}", fmt::join(r, ", ")));
  }
  if (!images.empty()) parts.push_back(fmt::format("images {}", fmt::join(images, ", ")));
  for (const auto& [key, glob] : annotations) parts.push_back(fmt::format("annotation {} = {}", key, glob));
  if (kind) parts.push_back(*kind == ContainerKind::sandbox ? "sandboxes only" : "containers only (no sandboxes)");
  return fmt::format("{}", fmt::join(parts, "; "));
}

bool ContainerMatch::opted_out(const Spec& spec) const {
  return !opt_out.empty() && spec.annotation(opt_out) == "true";
}

bool ContainerMatch::holds(const Spec& spec) const {
  return !opted_out(spec) && conditions.holds(spec) && !(exclude && exclude->holds(spec));
}

std::string ContainerMatch::describe() const {
  std::string text = conditions.empty() ? "every container" : conditions.describe();
  if (exclude) text += "; not (" + exclude->describe() + ")";
  if (!opt_out.empty()) text += "; unless opted out (annotation " + opt_out + " = \"true\")";
  return text;
}

ContainerMatch read_container_match(config::Section& t, std::string_view who, std::string_view opt_out) {
  ContainerMatch match;
  match.opt_out = opt_out;
  auto m = t.table("match");
  if (!m) return match;
  match.conditions = read_conditions(*m, who);
  match.exclude = read_not(*m, who);
  m->finish();
  return match;
}

std::string read_opt_out(config::Section& t) {
  auto key = t.string("opt-out-annotation");
  if (!key) return "";
  if (!annotation_key(*key))
    t.fail("opt-out-annotation", shown(*key) + " is not an annotation key ([prefix/]name, as Kubernetes spells one)");
  return *key;
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
