// SPDX-License-Identifier: Apache-2.0
// Applying [[requirements]] rules to a spec. Every change here only adds or
// raises, so applying a rule twice is the same as applying it once.
#include "requirements/modifier.h"

#include <fnmatch.h>
#include <sys/resource.h>

#include <algorithm>

#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/base/syscalls.h"
#include "specshim/base/text.h"
#include "specshim/modifiers/factories.h"
#include "specshim/modifiers/requirements.h"

namespace specshim {
namespace requirements {
namespace {

// The rlimit types runc accepts (libcontainer/configs rlimitMap).
constexpr std::pair<const char*, int> kRlimits[] = {
    {"RLIMIT_AS", RLIMIT_AS},           {"RLIMIT_CORE", RLIMIT_CORE},         {"RLIMIT_CPU", RLIMIT_CPU},
    {"RLIMIT_DATA", RLIMIT_DATA},       {"RLIMIT_FSIZE", RLIMIT_FSIZE},       {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK}, {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},
    {"RLIMIT_NOFILE", RLIMIT_NOFILE},   {"RLIMIT_NPROC", RLIMIT_NPROC},       {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},   {"RLIMIT_RTTIME", RLIMIT_RTTIME},     {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
    {"RLIMIT_STACK", RLIMIT_STACK},
};

// Requested is what a spec asks for, in the three vocabularies rules match on.
struct Requested {
  std::vector<std::string> device_paths;
  std::vector<std::string> cdi_kinds;
  std::vector<std::string> resources;
};

// cdi_kind returns vendor/class of a fully qualified CDI device name
// (vendor.com/class=name), or empty for anything else: malformed requests
// are the cdi modifier's to report, here they just match nothing.
std::string cdi_kind(std::string_view device) {
  auto eq = device.find('=');
  auto slash = device.find('/');
  if (eq == std::string_view::npos || slash == std::string_view::npos || slash == 0 || slash + 1 >= eq ||
      eq + 1 == device.size())
    return {};
  return std::string(device.substr(0, eq));
}

Requested requested(const Spec& spec) {
  Requested r;
  if (const Json* devices = spec.find({"linux", "devices"}); devices && devices->is_array())
    for (const auto& d : *devices)
      if (d.is_object() && d.contains("path") && d["path"].is_string()) r.device_paths.push_back(d["path"]);
  const Json* annotations = spec.find({"annotations"});
  if (!annotations || !annotations->is_object()) return r;
  for (const auto& [key, value] : annotations->items()) {
    if (!value.is_string()) continue;
    const auto& text = value.get_ref<const std::string&>();
    if (key == kResourcesAnnotation)
      for (auto resource : split_list(text, " \t")) r.resources.emplace_back(resource);
    if (key == kCdiDevicesAnnotation || key.rfind(kCdiAnnotationPrefix, 0) == 0)
      for (auto device : split_list(text, " \t"))
        if (auto kind = cdi_kind(device); !kind.empty()) r.cdi_kinds.push_back(kind);
  }
  return r;
}

// text returns object[key] when it is a string, else empty: spec fields of
// the wrong type match nothing rather than throw a JSON library error.
std::string text(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// matched_by returns what made rule match ("device `/dev/vfio/3`"), or empty.
std::string matched_by(const Rule& rule, const Requested& req) {
  for (const auto& glob : rule.match.devices)
    for (const auto& path : req.device_paths)
      if (::fnmatch(glob.c_str(), path.c_str(), FNM_PATHNAME) == 0) return "device `" + path + "`";
  for (const auto& kind : rule.match.cdi_kinds)
    if (contains(req.cdi_kinds, kind)) return "CDI kind `" + kind + "`";
  for (const auto& resource : rule.match.resources)
    if (contains(req.resources, resource)) return "resource `" + resource + "`";
  return {};
}

Json& member_array(Json& object, const char* key, std::string_view where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return object[key] = Json::array();
  if (!it->is_array()) throw Error("spec field `" + std::string(where) + "` is not an array");
  return *it;
}

void add_capabilities(Json& process, const Rule& rule) {
  if (rule.capabilities.empty()) return;
  auto caps = process.find("capabilities");
  // No capabilities object: runc leaves the process its full set, already a superset.
  if (caps == process.end() || caps->is_null()) return;
  if (!caps->is_object()) throw Error("spec field `process.capabilities` is not an object");
  for (const auto& set : rule.capability_sets) {
    Json& list = member_array(*caps, set.c_str(), "process.capabilities." + set);
    for (const auto& cap : rule.capabilities)
      if (std::find(list.begin(), list.end(), cap) == list.end()) list.push_back(cap);
  }
}

std::uint64_t limit_value(const Json& entry, const char* key, const std::string& type) {
  auto it = entry.find(key);
  if (it == entry.end() || !it->is_number_unsigned())
    throw Error("spec rlimit `" + type + "`: `" + key + "` is not an unsigned number");
  return it->get<std::uint64_t>();
}

void raise_rlimits(Json& process, const Rule& rule, const InheritedLimit& inherited) {
  if (rule.rlimits.empty()) return;
  Json& rlimits = member_array(process, "rlimits", "process.rlimits");
  for (const auto& limit : rule.rlimits) {
    bool found = false;
    for (auto& entry : rlimits) {
      if (!entry.is_object() || text(entry, "type") != limit.type) continue;
      found = true;
      auto hard = limit_value(entry, "hard", limit.type), soft = limit_value(entry, "soft", limit.type);
      if (hard < limit.hard) entry["hard"] = limit.hard;
      if (soft < limit.soft) entry["soft"] = limit.soft;
    }
    if (found) continue;
    // Not set: the container would inherit the runtime's limit; keep that when it is higher.
    auto [soft, hard] = inherited(limit.type);
    rlimits.push_back(
        Json{{"type", limit.type}, {"hard", std::max(hard, limit.hard)}, {"soft", std::max(soft, limit.soft)}});
  }
}

void add_gids(Json& process, const Rule& rule) {
  if (rule.additional_gids.empty()) return;
  Json& user = process["user"];
  if (user.is_null()) user = Json::object();
  if (!user.is_object()) throw Error("spec field `process.user` is not an object");
  Json& gids = member_array(user, "additionalGids", "process.user.additionalGids");
  for (auto gid : rule.additional_gids)
    if (std::find(gids.begin(), gids.end(), gid) == gids.end()) gids.push_back(gid);
}

// add_env sets the rule's keys the spec does not set: what the pod says
// about its own environment wins over a node-wide default.
void add_env(Json& process, const Rule& rule) {
  if (rule.env.empty()) return;
  Json& env = member_array(process, "env", "process.env");
  for (const auto& kv : rule.env) {
    std::string key = kv.substr(0, kv.find('='));
    bool present = std::any_of(env.begin(), env.end(), [&](const Json& e) {
      if (!e.is_string()) return false;
      const auto& s = e.get_ref<const std::string&>();
      return s.compare(0, key.size(), key) == 0 && (s.size() == key.size() || s[key.size()] == '=');
    });
    if (!present) env.push_back(kv);
  }
}

// permits reports whether a seccomp action lets the syscall run.
bool permits(std::string_view action) {
  return action == "SCMP_ACT_ALLOW" || action == "SCMP_ACT_LOG";
}

// Verdict is what a profile's rules without argument filters say about one
// syscall: nothing, allowed by some rule, or only denied (the first denying
// action kept for the message).
struct Verdict {
  bool named = false;
  bool allowed = false;
  std::string denied_by;
};

Verdict unconditional(const Json& rules, std::string_view syscall) {
  Verdict v;
  for (const auto& r : rules) {
    if (!r.is_object()) continue;
    auto args = r.find("args");
    if (args != r.end() && args->is_array() && !args->empty()) continue;
    auto names = r.find("names");
    if (names == r.end() || !names->is_array() || std::find(names->begin(), names->end(), syscall) == names->end())
      continue;
    std::string action = text(r, "action");
    if (permits(action))
      v.allowed = true;
    else if (!v.named)
      v.denied_by = action.empty() ? "no valid action" : action;
    v.named = true;
  }
  return v;
}

std::vector<std::string> profile_archs(const Json& profile) {
  std::vector<std::string> archs;
  if (auto a = profile.find("architectures"); a != profile.end() && a->is_array())
    for (const auto& v : *a)
      if (v.is_string()) archs.push_back(v);
  if (archs.empty()) archs.push_back(syscalls::native_arch());
  return archs;
}

// allow_syscalls adds one allow rule for the matched rules' syscalls that a
// confining profile would not let through. It never touches defaultAction or
// existing rules, and does nothing without a profile or under a permissive one.
void allow_syscalls(Spec& spec, const std::vector<const Rule*>& matched) {
  const Json* found = spec.find({"linux", "seccomp"});
  if (!found || found->is_null()) return;
  if (!found->is_object()) throw Error("spec field `linux.seccomp` is not an object");
  if (permits(text(*found, "defaultAction"))) return;
  Json& profile = spec.object_at({"linux", "seccomp"});
  auto archs = profile_archs(profile);
  Json& rules = member_array(profile, "syscalls", "linux.seccomp.syscalls");
  Json names = Json::array();
  for (const Rule* rule : matched) {
    for (const auto& syscall : rule->seccomp_allow) {
      for (const auto& arch : archs)
        if (!syscalls::exists_on(syscall, arch))
          throw Error("rule `" + rule->name + "`: syscall `" + syscall + "` does not exist on `" + arch +
                      "`, an architecture of the container's seccomp profile");
      Verdict verdict = unconditional(rules, syscall);
      if (verdict.allowed || std::find(names.begin(), names.end(), syscall) != names.end()) continue;
      if (verdict.named)
        throw Error("rule `" + rule->name + "`: the container's seccomp profile explicitly denies `" + syscall + "` (" +
                    verdict.denied_by + "); specshim does not override an explicit denial");
      names.push_back(syscall);
    }
  }
  if (!names.empty()) rules.push_back(Json{{"names", std::move(names)}, {"action", "SCMP_ACT_ALLOW"}});
}

}  // namespace

int rlimit_resource(std::string_view type) {
  for (const auto& [name, resource] : kRlimits)
    if (type == name) return resource;
  return -1;
}

std::pair<std::uint64_t, std::uint64_t> own_limit(std::string_view type) {
  struct rlimit rl {};
  int resource = rlimit_resource(type);
  if (resource < 0) throw Error("unknown rlimit type `" + std::string(type) + "`");
  if (::getrlimit(static_cast<__rlimit_resource>(resource), &rl) != 0) throw_errno("getrlimit " + std::string(type));
  return {rl.rlim_cur, rl.rlim_max};
}

Requirements::Requirements(std::vector<Rule> rules, InheritedLimit inherited)
    : rules_(std::move(rules)), inherited_(std::move(inherited)) {}

void Requirements::apply(Spec& spec, Context& ctx) {
  if (ctx.kind == ContainerKind::sandbox) return;
  const Json* process = spec.find({"process"});
  if (!process || !process->is_object()) return;
  Requested req = requested(spec);
  std::vector<const Rule*> matched;
  for (const auto& rule : rules_) {
    std::string why = matched_by(rule, req);
    if (why.empty()) continue;
    if (ctx.pass == 1) log::debug("requirements: rule {} matches {}", rule.name, why);
    matched.push_back(&rule);
  }
  if (matched.empty()) return;
  Json& proc = spec.object_at({"process"});
  for (const Rule* rule : matched) {
    add_capabilities(proc, *rule);
    raise_rlimits(proc, *rule, inherited_);
    add_gids(proc, *rule);
    add_env(proc, *rule);
  }
  allow_syscalls(spec, matched);
}

}  // namespace requirements

std::unique_ptr<Modifier> make_requirements(config::Section& s) {
  if (!s.lists("requirements", "rule")) return nullptr;
  auto rules = requirements::read_rules(s);
  if (rules.empty()) return nullptr;
  return std::make_unique<requirements::Requirements>(std::move(rules));
}

}  // namespace specshim
