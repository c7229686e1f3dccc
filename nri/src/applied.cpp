// SPDX-License-Identifier: Apache-2.0
// NRI's generate.Adjust, as far as the adjustment builder needs it (applied.h).
#include "applied.h"

#include <algorithm>
#include <map>

namespace specshim::nri {
namespace {

// removal reads NRI's removal marker: a key or destination starting with '-'.
std::pair<std::string, bool> removal(const std::string& key) {
  if (!key.empty() && key[0] == '-') return {key.substr(1), true};
  return {key, false};
}

// EnvList is a process.env list with runtime-tools' one-entry-per-key index.
struct EnvList {
  Json list = Json::array();
  std::map<std::string, std::size_t> at;
  void add(const std::string& key, const std::string& value) {
    if (key.empty()) return;
    std::string entry = key + "=" + value;
    if (auto it = at.find(key); it != at.end()) {
      list[it->second] = entry;
      return;
    }
    at.emplace(key, list.size());
    list.push_back(entry);
  }
};

std::size_t depth(const std::string& destination) {
  std::string clean = destination;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  return static_cast<std::size_t>(std::count(clean.begin(), clean.end(), '/'));
}

}  // namespace

Json applied_env(const Json& env, const api::ContainerAdjustment& adj) {
  std::map<std::string, const api::KeyValue*> mod;
  for (const auto& kv : adj.env()) mod[removal(kv.key()).first] = &kv;
  if (mod.empty() || !env.is_array()) return env;
  EnvList out;
  for (const auto& e : env) {
    if (!e.is_string()) continue;
    const std::string& s = e.get_ref<const std::string&>();
    auto eq = s.find('=');
    if (eq == std::string::npos) continue;
    std::string key = s.substr(0, eq);
    if (auto it = mod.find(key); it != mod.end()) {
      const api::KeyValue* m = it->second;
      mod.erase(it);
      if (!removal(m->key()).second) out.add(m->key(), m->value());
      continue;
    }
    out.add(key, s.substr(eq + 1));
  }
  for (const auto& kv : adj.env())
    if (!removal(kv.key()).second && mod.count(kv.key())) out.add(kv.key(), kv.value());
  return out.list;
}

Json applied_mounts(const Json& mounts, const api::ContainerAdjustment& adj) {
  if (adj.mounts().empty()) return mounts;
  Json out = mounts.is_array() ? mounts : Json::array();
  auto remove_first = [&](const std::string& destination) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Json& m) {
      return m.is_object() && m.value("destination", Json()) == Json(destination);
    });
    if (it != out.end()) out.erase(it);
  };
  for (const auto& m : adj.mounts()) {
    auto [destination, removed] = removal(m.destination());
    remove_first(destination);
    if (removed) continue;
    Json j = {{"destination", m.destination()}};
    if (!m.type().empty()) j["type"] = m.type();
    j["source"] = m.source();
    if (m.options_size()) j["options"] = Json(std::vector<std::string>(m.options().begin(), m.options().end()));
    out.push_back(std::move(j));
  }
  auto destination = [](const Json& m) { return m.is_object() ? m.value("destination", std::string()) : ""; };
  std::stable_sort(out.begin(), out.end(), [&](const Json& a, const Json& b) {
    std::string da = destination(a), db = destination(b);
    std::size_t pa = depth(da), pb = depth(db);
    return pa != pb ? pa < pb : da < db;
  });
  return out;
}

}  // namespace specshim::nri
