// SPDX-License-Identifier: Apache-2.0
// What one plugin answer granted, as CDI names (grant_of), and the
// volume-mounts strategy's names it shares with the modifier (grant.h).
#include "env_devices/grant.h"

#include <algorithm>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/node/cdi.h"

namespace specshim::env_devices {
namespace {

void add_list(const Entry& e, std::string_view value, Granted& g) {
  DeviceList list;
  try {
    list = parse_list(e.grammar, value);
  } catch (const Error&) {
    return;  // a plugin answer too long to be a grant grants nothing
  }
  if (list.what == DeviceList::What::all) g.all = true;
  for (const auto& item : list.names) add_name(g.names, qualify(e.kind, item));
}

}  // namespace

std::string mounted_name(std::string_view rel) {
  if (rel.rfind("imex/", 0) == 0) return {};
  if (rel.rfind("cdi/", 0) == 0) {
    std::string q(rel.substr(4));
    if (q.find('=') == std::string::npos) {
      auto last = q.rfind('/');
      if (last != std::string::npos && q.find('/') != last) q[last] = '=';
    }
    return q;
  }
  return std::string(rel);
}

std::optional<std::string> below(std::string_view dir, std::string_view path) {
  std::string p = fs::clean_path(path);
  if (p.size() <= dir.size() + 1 || p.compare(0, dir.size(), dir) != 0 || p[dir.size()] != '/') return std::nullopt;
  return p.substr(dir.size() + 1);
}

void add_name(std::vector<std::string>& names, std::string name) {
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
}

std::optional<std::string> dev_null_below(const Json& m, std::string_view dir) {
  if (!m.is_object() || !m.contains("source") || !m.contains("destination") || !m["source"].is_string() ||
      !m["destination"].is_string() || fs::clean_path(m["source"].get_ref<const std::string&>()) != "/dev/null")
    return std::nullopt;
  return below(dir, m["destination"].get_ref<const std::string&>());
}

std::vector<std::string> mounted(const Spec& spec, const std::string& dir) {
  std::vector<std::string> names, seen;
  const Json* mounts = spec.find({"mounts"});
  if (!mounts || !mounts->is_array()) return names;
  for (const auto& m : *mounts) {
    auto rel = dev_null_below(m, dir);
    if (!rel || std::find(seen.begin(), seen.end(), *rel) != seen.end()) continue;
    seen.push_back(*rel);
    add_name(names, mounted_name(*rel));
  }
  return names;
}

Granted grant_of(const Entry& e, const Grant& grant) {
  Granted g;
  // The volume-mounts dir as the value says: the mounts list the devices.
  for (const auto& [key, value] : grant.envs)
    if (key == e.env && (e.volume_mounts.empty() || fs::clean_path(value) != e.volume_mounts)) add_list(e, value, g);
  if (!e.volume_mounts.empty())
    for (const auto& path : grant.mounts)
      if (auto rel = below(e.volume_mounts, path)) add_name(g.names, qualify(e.kind, mounted_name(*rel)));
  for (const auto& name : grant.cdi_devices)
    if (cdi::parse_qualified_name(name)) add_name(g.names, name);
  return g;
}

}  // namespace specshim::env_devices
