// SPDX-License-Identifier: Apache-2.0
// The chain's difference as a ContainerAdjustment (adjust.h).
#include "specshim/nri/adjust.h"

#include <algorithm>
#include <map>
#include <set>

#include "adjust_parts.h"
#include "applied.h"
#include "specshim/base/text.h"

namespace specshim::nri {
namespace {

const Json* at(const Json& j, std::initializer_list<const char*> path) {
  const Json* p = &j;
  for (const char* k : path) {
    if (!p->is_object()) return nullptr;
    auto it = p->find(k);
    if (it == p->end()) return nullptr;
    p = &*it;
  }
  return p;
}

}  // namespace

const Json& array_at(const Json& j, std::initializer_list<const char*> path) {
  static const Json empty = Json::array();
  const Json* p = at(j, path);
  return p && p->is_array() ? *p : empty;
}

namespace {

void erase(Json& j, std::initializer_list<const char*> path) {
  Json* p = &j;
  const char* last = nullptr;
  for (const char* k : path) {
    if (last) {
      if (!p->is_object() || !p->contains(last)) return;
      p = &(*p)[last];
    }
    last = k;
  }
  if (p->is_object()) p->erase(last);
}

// prune drops empty objects and arrays, which OCI reads as absent.
void prune(Json& j) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end();) {
    prune(it.value());
    if ((it.value().is_object() || it.value().is_array()) && it.value().empty())
      it = j.erase(it);
    else
      ++it;
  }
}

// pruned is j without empty objects and arrays.
Json pruned(Json j) {
  prune(j);
  return j;
}

// first_difference names the first place a and b differ once empty objects
// and arrays count as absent: the first member on one side only, or the
// first plain value that differs ("process.capabilities", not "process"
// when the view's process held only what was taken out).
std::string first_difference(const Json& a, const Json& b, const std::string& where) {
  if (!a.is_object() || !b.is_object()) return where;
  std::vector<std::string> keys;
  for (auto it = a.begin(); it != a.end(); ++it) keys.push_back(it.key());
  for (auto it = b.begin(); it != b.end(); ++it)
    if (!a.contains(it.key())) keys.push_back(it.key());
  static const Json none = Json::object();
  for (const auto& k : keys) {
    const Json& x = a.contains(k) ? a[k] : none;
    const Json& y = b.contains(k) ? b[k] : none;
    Json px = pruned(x), py = pruned(y);
    if (px == py) continue;
    std::string w = where.empty() ? k : where + "." + k;
    return a.contains(k) && b.contains(k) ? first_difference(x, y, w) : w;
  }
  return where;
}

// env_map: the value each key of a process.env list has for the process
// (its last entry), keys in first-seen order.
std::vector<std::pair<std::string, std::string>> env_map(const Json& env) {
  std::vector<std::pair<std::string, std::string>> out;
  std::map<std::string, std::size_t> index;
  for (const auto& e : env) {
    if (!e.is_string()) continue;
    std::string s = e.get<std::string>();
    auto eq = s.find('=');
    std::string k = s.substr(0, eq), v = eq == std::string::npos ? "" : s.substr(eq + 1);
    auto [it, fresh] = index.emplace(k, out.size());
    if (fresh)
      out.emplace_back(k, v);
    else
      out[it->second].second = v;
  }
  return out;
}

void adjust_env(const Json& before, const Json& after, api::ContainerAdjustment& adj) {
  auto b = env_map(array_at(before, {"process", "env"})), a = env_map(array_at(after, {"process", "env"}));
  std::map<std::string, std::string> old(b.begin(), b.end()), now(a.begin(), a.end());
  for (auto& [k, v] : a) {
    auto it = old.find(k);
    if (it != old.end() && it->second == v) continue;
    auto* kv = adj.add_env();
    kv->set_key(k);
    kv->set_value(v);
  }
  for (auto& [k, v] : b)
    if (!now.count(k)) adj.add_env()->set_key("-" + k);
}

void adjust_annotations(const Json& before, const Json& after, api::ContainerAdjustment& adj) {
  static const Json none = Json::object();
  const Json* b = at(before, {"annotations"});
  const Json* a = at(after, {"annotations"});
  if (!b || !b->is_object()) b = &none;
  if (!a || !a->is_object()) a = &none;
  for (auto it = a->begin(); it != a->end(); ++it) {
    if (!it.value().is_string()) continue;
    if (b->contains(it.key()) && (*b)[it.key()] == it.value()) continue;
    (*adj.mutable_annotations())[it.key()] = it.value().get<std::string>();
  }
  for (auto it = b->begin(); it != b->end(); ++it)
    if (!a->contains(it.key())) (*adj.mutable_annotations())["-" + it.key()] = "";
}

}  // namespace

std::map<std::string, Json> by_key(const Json& list, const char* key) {
  std::map<std::string, Json> out;
  for (const auto& e : list)
    if (e.is_object() && e.contains(key) && e[key].is_string()) out[e[key].get<std::string>()] = e;
  return out;
}

namespace {

std::vector<std::string> string_list(const Json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& s : j[key])
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

void adjust_mounts(const Json& before, const Json& after, api::ContainerAdjustment& adj) {
  auto b = by_key(array_at(before, {"mounts"}), "destination");
  auto a = by_key(array_at(after, {"mounts"}), "destination");
  // In the order the chain has them: NRI sorts what it adds by destination.
  for (const auto& m : array_at(after, {"mounts"})) {
    if (!m.is_object() || !m.contains("destination")) continue;
    std::string dest = m["destination"].get<std::string>();
    auto it = b.find(dest);
    if (it != b.end() && it->second == m) continue;
    auto* out = adj.add_mounts();
    out->set_destination(dest);
    out->set_type(m.value("type", ""));
    out->set_source(m.value("source", ""));
    for (auto& o : string_list(m, "options")) out->add_options(o);
  }
  for (auto& [dest, m] : b)
    if (!a.count(dest)) adj.add_mounts()->set_destination("-" + dest);
}

void adjust_hooks(const Json& before, const Json& after, api::ContainerAdjustment& adj, const Refusal& refuse) {
  using Field = google::protobuf::RepeatedPtrField<api::Hook>* (api::Hooks::*)();
  static const std::pair<const char*, Field> kinds[] = {{"prestart", &api::Hooks::mutable_prestart},
                                                        {"createRuntime", &api::Hooks::mutable_create_runtime},
                                                        {"createContainer", &api::Hooks::mutable_create_container},
                                                        {"startContainer", &api::Hooks::mutable_start_container},
                                                        {"poststart", &api::Hooks::mutable_poststart},
                                                        {"poststop", &api::Hooks::mutable_poststop}};
  for (auto& [name, field] : kinds) {
    const Json& b = array_at(before, {"hooks", name});
    const Json& a = array_at(after, {"hooks", name});
    bool prefix = a.size() >= b.size() && std::equal(b.begin(), b.end(), a.begin());
    if (!prefix) refuse(std::string("hooks.") + name, "NRI appends hooks; it cannot remove or change one");
    for (std::size_t i = b.size(); i < a.size(); ++i) {
      api::Hook* h = (adj.mutable_hooks()->*field)()->Add();
      h->set_path(a[i].value("path", ""));
      for (auto& s : string_list(a[i], "args")) h->add_args(s);
      for (auto& s : string_list(a[i], "env")) h->add_env(s);
      if (a[i].contains("timeout") && a[i]["timeout"].is_number_integer())
        h->mutable_timeout()->set_value(a[i]["timeout"].get<std::int64_t>());
    }
  }
}

void adjust_cpuset(const Json& before, const Json& after, api::ContainerAdjustment& adj, const Refusal& refuse) {
  for (const char* key : {"cpus", "mems"}) {
    const Json* b = at(before, {"linux", "resources", "cpu", key});
    const Json* a = at(after, {"linux", "resources", "cpu", key});
    if ((b ? *b : Json()) == (a ? *a : Json())) continue;
    if (!a || !a->is_string() || a->get<std::string>().empty())
      refuse(std::string("linux.resources.cpu.") + key, "NRI can set a cpuset, not clear one");
    auto* cpu = adj.mutable_linux()->mutable_resources()->mutable_cpu();
    if (key[0] == 'c')
      cpu->set_cpus(a->get<std::string>());
    else
      cpu->set_mems(a->get<std::string>());
  }
}

void adjust_rlimits(const Json& before, const Json& after, api::ContainerAdjustment& adj, const Refusal& refuse) {
  auto b = by_key(array_at(before, {"process", "rlimits"}), "type");
  auto a = by_key(array_at(after, {"process", "rlimits"}), "type");
  for (auto& [type, r] : b) {
    auto it = a.find(type);
    if (it == a.end() || it->second != r)
      refuse("process.rlimits (" + type + ")", "NRI appends rlimits; it cannot remove or change one");
  }
  for (const auto& r : array_at(after, {"process", "rlimits"})) {
    if (!r.is_object() || !r.contains("type") || b.count(r["type"].get<std::string>())) continue;
    auto* out = adj.add_rlimits();
    out->set_type(r["type"].get<std::string>());
    out->set_hard(r.value("hard", std::uint64_t{0}));
    out->set_soft(r.value("soft", std::uint64_t{0}));
  }
}

// check_env refuses an env change the runtime would not make as the chain
// made it (applied_env): a key the spec repeats keeps its last original
// value whatever the adjustment says.
void check_env(const Json& before, const Json& after, const api::ContainerAdjustment& adj, const Refusal& refuse) {
  const Json& env = array_at(before, {"process", "env"});
  auto got_list = env_map(applied_env(env, adj)), want_list = env_map(array_at(after, {"process", "env"}));
  std::map<std::string, std::string> got(got_list.begin(), got_list.end()), want(want_list.begin(), want_list.end());
  std::set<std::string> keys;
  for (const auto* m : {&got, &want})
    for (const auto& [k, v] : *m) keys.insert(k);
  auto value = [](const std::map<std::string, std::string>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? std::string("no such variable") : shown(it->second);
  };
  for (const auto& k : keys) {
    auto g = got.find(k), w = want.find(k);
    if ((g == got.end()) == (w == want.end()) && (g == got.end() || g->second == w->second)) continue;
    auto entries = std::count_if(env.begin(), env.end(), [&](const Json& e) {
      return e.is_string() && e.get_ref<const std::string&>().rfind(k + "=", 0) == 0;
    });
    std::string what = "the process would get " + value(got, k) + " where the chain's spec has " + value(want, k);
    if (entries > 1)
      what = "the spec has " + std::to_string(entries) +
             " entries of it, and NRI's AdjustEnv gives the first the new value, then writes each later entry's own "
             "value over it: " +
             what;
    refuse("process.env (" + k + ")", what);
  }
}

// check_mounts refuses a mount change the runtime would not make as the
// chain made it (applied_mounts): AdjustMounts replaces only the first
// mount at a destination.
void check_mounts(const Json& before, const Json& after, const api::ContainerAdjustment& adj, const Refusal& refuse) {
  auto at_destination = [](const Json& list) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& m : list)
      if (m.is_object() && m.contains("destination") && m["destination"].is_string())
        out[m["destination"].get<std::string>()].push_back(m.dump());
    for (auto& [d, v] : out) std::sort(v.begin(), v.end());
    return out;
  };
  auto got = at_destination(applied_mounts(array_at(before, {"mounts"}), adj));
  auto want = at_destination(array_at(after, {"mounts"}));
  for (const auto* side : {&got, &want})
    for (const auto& [d, v] : *side) {
      auto g = got.find(d), w = want.find(d);
      if (g != got.end() && w != want.end() && g->second == w->second) continue;
      std::size_t n = g == got.end() ? 0 : g->second.size(), m = w == want.end() ? 0 : w->second.size();
      refuse("mounts (" + d + ")",
             "NRI's AdjustMounts replaces the first mount at a destination and keeps the rest: "
             "the runtime would mount " +
                 std::to_string(n) + " there where the chain's spec has " + std::to_string(m) +
                 (n == m ? ", not the same" : ""));
    }
}

}  // namespace

api::ContainerAdjustment adjustment(const Json& before, const Json& after, const Level& level,
                                    std::string_view changed_by) {
  Refusal refuse{level, changed_by};
  api::ContainerAdjustment adj;
  adjust_annotations(before, after, adj);
  adjust_env(before, after, adj);
  adjust_mounts(before, after, adj);
  adjust_hooks(before, after, adj, refuse);
  adjust_devices(before, after, adj, level, refuse);
  adjust_cpuset(before, after, adj, refuse);
  adjust_rlimits(before, after, adj, refuse);
  check_env(before, after, adj, refuse);
  check_mounts(before, after, adj, refuse);

  const Json* args_b = at(before, {"process", "args"});
  const Json* args_a = at(after, {"process", "args"});
  if ((args_b ? *args_b : Json()) != (args_a ? *args_a : Json())) {
    if (!level.args()) refuse("process.args", "NRI before v0.10 (containerd 2.2) cannot change a process's args");
    for (auto& s : string_list(at(after, {"process"}) ? *at(after, {"process"}) : Json::object(), "args"))
      adj.add_args(s);
  }
  const Json* cg_b = at(before, {"linux", "cgroupsPath"});
  const Json* cg_a = at(after, {"linux", "cgroupsPath"});
  if ((cg_b ? *cg_b : Json()) != (cg_a ? *cg_a : Json())) {
    if (!cg_a || !cg_a->is_string()) refuse("linux.cgroupsPath", "NRI can set a cgroups path, not clear one");
    adj.mutable_linux()->set_cgroups_path(cg_a->get<std::string>());
  }

  // Everything else must be as it was: NRI has no field for it.
  Json b = before, a = after;
  for (Json* j : {&b, &a}) {
    for (auto path : {std::initializer_list<const char*>{"annotations"},
                      {"mounts"},
                      {"hooks"},
                      {"process", "env"},
                      {"process", "args"},
                      {"process", "rlimits"},
                      {"linux", "devices"},
                      {"linux", "resources", "devices"},
                      {"linux", "resources", "cpu", "cpus"},
                      {"linux", "resources", "cpu", "mems"},
                      {"linux", "cgroupsPath"}})
      erase(*j, path);
  }
  if (pruned(b) != pruned(a)) {
    std::string field = first_difference(b, a, "");
    refuse(field, "NRI has no adjustment for it (docs/nri.md, \"What maps\")");
  }
  return adj;
}

}  // namespace specshim::nri
