// SPDX-License-Identifier: Apache-2.0
// Reading and validating [[requirements]] rules. Everything a rule names is
// checked here, at config load, so a create never meets a typo.
#include <algorithm>
#include <set>

#include "rule_list.h"
#include "specshim/base/caps.h"
#include "specshim/base/error.h"
#include "specshim/base/syscalls.h"
#include "specshim/modifiers/requirements.h"

namespace specshim::requirements {
namespace {

constexpr const char* kDefaultSets[] = {"bounding", "effective", "permitted"};
constexpr const char* kAllSets[] = {"bounding", "effective", "permitted", "inheritable", "ambient"};

// qualified_kind accepts vendor/class (example.com/accel), as CDI kinds are spelled.
bool qualified_kind(std::string_view s) {
  auto slash = s.find('/');
  return slash != std::string_view::npos && config::plain_name(s.substr(0, slash)) &&
         config::plain_name(s.substr(slash + 1));
}

std::vector<std::string> read_strings(config::Section& t, std::string_view key, std::string_view rule,
                                      bool (*valid)(std::string_view), std::string_view what) {
  std::vector<std::string> out = t.strings(key).value_or(std::vector<std::string>{});
  for (const auto& v : out)
    if (!valid(v)) t.fail(key, "rule `" + std::string(rule) + "`: `" + v + "` is not " + std::string(what));
  return out;
}

Match read_match(config::Section& t, const std::string& rule) {
  auto m = t.table("match");
  if (!m) t.fail("", "rule `" + rule + "`: needs a match table");
  Match match;
  match.devices = read_strings(
      *m, "devices", rule, [](std::string_view g) { return !g.empty() && g.front() == '/' && !contains_control(g); },
      "an absolute path glob");
  match.cdi_kinds = read_strings(*m, "cdi-kinds", rule, qualified_kind, "a CDI kind (vendor/class)");
  match.resources = read_strings(*m, "resources", rule, qualified_kind, "a resource name (domain/name)");
  m->finish();
  if (match.devices.empty() && match.cdi_kinds.empty() && match.resources.empty())
    t.fail("match", "rule `" + rule + "`: needs at least one of devices, cdi-kinds, resources");
  return match;
}

std::vector<std::string> read_capabilities(config::Section& t, const std::string& rule) {
  std::vector<std::string> caps;
  for (const auto& name : t.strings("capabilities").value_or(std::vector<std::string>{})) {
    try {
      caps.push_back(caps::canonical(name));
    } catch (const Error& e) {
      t.fail("capabilities", "rule `" + rule + "`: " + e.what());
    }
  }
  return caps;
}

std::vector<std::string> read_sets(config::Section& t, const std::string& rule) {
  auto sets = t.strings("capability-sets");
  if (!sets) return {std::begin(kDefaultSets), std::end(kDefaultSets)};
  auto has = [&](std::string_view s) { return std::find(sets->begin(), sets->end(), s) != sets->end(); };
  if (sets->empty()) t.fail("capability-sets", "rule `" + rule + "`: must name at least one set");
  for (const auto& s : *sets) {
    if (std::find(std::begin(kAllSets), std::end(kAllSets), s) == std::end(kAllSets))
      t.fail("capability-sets",
             "rule `" + rule + "`: unknown set `" + s + "` (bounding, effective, permitted, inheritable, ambient)");
    if (std::count(sets->begin(), sets->end(), s) > 1)
      t.fail("capability-sets", "rule `" + rule + "`: set `" + s + "` listed twice");
  }
  // The kernel drops an ambient capability that is not also permitted and inheritable.
  if (has("ambient") && !(has("permitted") && has("inheritable")))
    t.fail("capability-sets", "rule `" + rule + "`: ambient needs permitted and inheritable too");
  return *sets;
}

std::uint64_t read_limit_value(config::Section& t, std::string_view key, const std::string& what) {
  if (t.kind(key) == config::Kind::string) {
    if (*t.string(key) != "unlimited") t.fail(key, what + ": must be a number or \"unlimited\"");
    return kUnlimited;
  }
  if (t.kind(key) == config::Kind::none) t.fail("", what + ": needs " + std::string(key));
  return static_cast<std::uint64_t>(*t.integer(key, 0, INT64_MAX));
}

std::vector<Limit> read_rlimits(config::Section& t, const std::string& rule) {
  auto table = t.table("rlimits");
  if (!table) return {};
  std::vector<Limit> out;
  for (const auto& type : table->keys()) {
    std::string what = "rule `" + rule + "`: " + type;
    if (rlimit_resource(type) < 0)
      table->fail(type, what + ": unknown rlimit type (RLIMIT_MEMLOCK, RLIMIT_NOFILE, ...)");
    Limit limit{type};
    if (table->kind(type) == config::Kind::table) {
      auto pair = table->table(type);
      limit.soft = read_limit_value(*pair, "soft", what);
      limit.hard = read_limit_value(*pair, "hard", what);
      pair->finish();
      if (limit.soft > limit.hard) table->fail(type, what + ": soft limit is above the hard limit");
    } else if (table->kind(type) == config::Kind::string) {
      limit.soft = limit.hard = read_limit_value(*table, type, what);
    } else {
      table->fail(type, what + ": must be \"unlimited\" or { soft = N, hard = N }");
    }
    out.push_back(limit);
  }
  table->finish();
  return out;
}

std::vector<std::string> read_syscalls(config::Section& t, const std::string& rule) {
  // The profile, and so its architectures, is only known at create; here a
  // name must be a syscall on at least one architecture a node may run.
  auto names = t.strings("seccomp-allow").value_or(std::vector<std::string>{});
  for (const auto& name : names) {
    const auto& archs = syscalls::common_archs();
    if (std::none_of(archs.begin(), archs.end(), [&](auto& a) { return syscalls::exists_on(name, a); }))
      t.fail("seccomp-allow", "rule `" + rule + "`: unknown syscall `" + name + "`");
  }
  return names;
}

std::vector<std::uint32_t> read_gids(config::Section& t, const std::string& rule) {
  std::vector<std::uint32_t> out;
  for (auto gid : t.integers("additional-gids", 0, 4294967294).value_or(std::vector<std::int64_t>{})) {
    if (gid == 0) t.fail("additional-gids", "rule `" + rule + "`: gid 0 would give the container root's group");
    out.push_back(static_cast<std::uint32_t>(gid));
  }
  return out;
}

std::vector<std::string> read_env(config::Section& t, const std::string& rule) {
  auto env = t.strings("env").value_or(std::vector<std::string>{});
  std::set<std::string> keys;
  for (const auto& e : env) {
    auto eq = e.find('=');
    std::string key = e.substr(0, eq);
    if (eq == std::string::npos || key.empty() || contains_control(key) || e.find('\0') != std::string::npos)
      t.fail("env", "rule `" + rule + "`: `" + e + "` is not KEY=VALUE");
    if (!keys.insert(key).second) t.fail("env", "rule `" + rule + "`: `" + key + "` set twice");
  }
  return env;
}

Rule read_rule(config::Section& t) {
  Rule r;
  r.name = read_rule_name(t, "rule");
  r.match = read_match(t, r.name);
  r.capabilities = read_capabilities(t, r.name);
  r.capability_sets = read_sets(t, r.name);
  r.rlimits = read_rlimits(t, r.name);
  r.seccomp_allow = read_syscalls(t, r.name);
  r.additional_gids = read_gids(t, r.name);
  r.env = read_env(t, r.name);
  t.finish();
  return r;
}

}  // namespace

std::vector<Rule> read_rules(config::Section& s) {
  return read_rule_list(s, "requirements", "rule", read_rule);
}

}  // namespace specshim::requirements
