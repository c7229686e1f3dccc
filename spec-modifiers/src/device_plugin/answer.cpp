// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier's pure parts: reading identity and requests from
// annotations, and merging a plugin's answer into the spec. Merging follows
// the kubelet and containerd where they are clear (bind mounts with rbind and
// rprivate, a device node plus an allow rule with the plugin's permissions,
// de-duplication by container path, first value per key wins) and never
// changes what is already in the spec.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "specshim/base/error.h"
#include "specshim/base/text.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/node/cdi.h"
#include "specshim/node/userns.h"

namespace specshim::device_plugin {
namespace {

constexpr std::size_t kMaxIds = 1024;
constexpr std::size_t kMaxIdBytes = 256;

std::string normal(const std::string& path) {
  std::string p = std::filesystem::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

void check_path(const std::string& path, const std::string& what) {
  if (path.empty() || path[0] != '/' || contains_control(path))
    throw Error(what + " " + shown(path) + " is not an absolute path");
}

bool is_under(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && (dir == "/" || path[dir.size()] == '/');
}

std::optional<std::int64_t> integer(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

std::string string_field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool covers(const std::string& granted, const std::string& wanted) {
  return std::all_of(wanted.begin(), wanted.end(), [&](char c) { return granted.find(c) != std::string::npos; });
}

bool merge_env(Spec& spec, const PreparedAnswer& a, std::vector<std::string>& conflicts) {
  bool changed = false;
  for (const auto& [key, value] : a.envs) {
    std::string prefix = key + "=";
    const Json* env = spec.find({"process", "env"});
    bool found = false;
    if (env && env->is_array())
      for (const auto& e : *env) {
        if (!e.is_string() || e.get_ref<const std::string&>().rfind(prefix, 0) != 0) continue;
        found = true;
        if (e.get_ref<const std::string&>() != prefix + value)
          conflicts.push_back("env " + key + ": kept " + shown(e.get<std::string>()) + ", not " + shown(value));
        break;
      }
    if (found) continue;
    spec.array_at({"process", "env"}).push_back(prefix + value);
    changed = true;
  }
  return changed;
}

bool merge_annotations(Spec& spec, const PreparedAnswer& a, std::vector<std::string>& conflicts) {
  bool changed = false;
  for (const auto& [key, value] : a.annotations) {
    const Json* have = spec.find({"annotations"});
    if (have && have->is_object() && have->contains(key)) {
      const Json& old = (*have)[key];
      if (!old.is_string() || old.get_ref<const std::string&>() != value)
        conflicts.push_back("annotation " + key + ": kept " + shown_json(old) + ", not " + shown(value));
      continue;
    }
    spec.object_at({"annotations"})[key] = value;
    changed = true;
  }
  return changed;
}

// merge_mount adds the bind mount m unless a mount is at its destination
// (one with another source is a conflict), before the first mount below it.
bool merge_mount(Spec& spec, const Json& m, std::vector<std::string>& conflicts) {
  std::string dest = m["destination"].get<std::string>();
  const Json* mounts = spec.find({"mounts"});
  std::optional<std::size_t> under;  // first mount below dest: the new one goes before it
  if (mounts && mounts->is_array())
    for (std::size_t i = 0; i < mounts->size(); ++i) {
      std::string d = normal(string_field((*mounts)[i], "destination"));
      if (d == dest) {
        if (string_field((*mounts)[i], "source") != m["source"].get<std::string>())
          conflicts.push_back("mount " + dest + ": kept source " + shown(string_field((*mounts)[i], "source")) +
                              ", not " + shown(m["source"].get<std::string>()));
        return false;
      }
      if (!under && is_under(d, dest)) under = i;
    }
  Json& list = spec.array_at({"mounts"});
  list.insert(under ? list.begin() + static_cast<std::ptrdiff_t>(*under) : list.end(), m);
  return true;
}

bool merge_mounts(Spec& spec, const PreparedAnswer& a, std::vector<std::string>& conflicts) {
  bool changed = false;
  for (const auto& m : a.mounts) changed |= merge_mount(spec, m, conflicts);
  return changed;
}

bool has_rule(const Spec& spec, const Json& rule) {
  const Json* rules = spec.find({"linux", "resources", "devices"});
  if (!rules || !rules->is_array()) return false;
  return std::any_of(rules->begin(), rules->end(), [&](const Json& r) {
    auto allow = r.is_object() ? r.find("allow") : r.end();
    return allow != r.end() && *allow == true && string_field(r, "type") == rule["type"].get<std::string>() &&
           integer(r, "major") == rule["major"].get<std::int64_t>() &&
           integer(r, "minor") == rule["minor"].get<std::int64_t>() &&
           covers(string_field(r, "access"), rule["access"].get<std::string>());
  });
}

// merge_devices adds each device node with its rule. In a user namespace a
// node whose host file is at another path becomes a bind mount of that file
// (userns.h); an entry at its path with its numbers is then replaced by it.
bool merge_devices(Spec& spec, const PreparedAnswer& a, std::vector<std::string>& conflicts) {
  bool changed = false;
  for (const auto& d : a.devices) {
    const Json* list = spec.find({"linux", "devices"});
    const Json* existing = nullptr;
    if (list && list->is_array())
      for (const auto& e : *list)
        if (e.is_object() && normal(string_field(e, "path")) == d.path) existing = &e;
    if (existing) {
      bool same = string_field(*existing, "type") == d.entry["type"].get<std::string>() &&
                  integer(*existing, "major") == d.entry["major"].get<std::int64_t>() &&
                  integer(*existing, "minor") == d.entry["minor"].get<std::int64_t>();
      if (!same) {
        conflicts.push_back("device " + d.path + ": kept " + existing->dump() + ", not " + d.entry.dump());
        continue;  // the rule would open a node the container does not have
      }
    }
    if (userns::binds_device(spec, d.path, d.host_path)) {
      std::string entry_path = existing ? string_field(*existing, "path") : "";
      std::size_t before = conflicts.size();
      changed |= merge_mount(spec, userns::device_bind_mount(d.path, d.host_path), conflicts);
      if (conflicts.size() != before) continue;
      if (!entry_path.empty()) changed |= userns::erase_device_entry(spec, entry_path);
    } else if (!existing) {
      spec.array_at({"linux", "devices"}).push_back(d.entry);
      changed = true;
    }
    if (!has_rule(spec, d.rule)) {
      spec.array_at({"linux", "resources", "devices"}).push_back(d.rule);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

std::vector<std::string> parse_device_ids(std::string_view key, std::string_view value) {
  std::string what = "annotation `" + std::string(key) + "`";
  // Tenant text: its depth is checked before nlohmann's recursive dump or
  // copy could meet it.
  Json list = parse_json(value, what, false);
  if (list.is_discarded() || !list.is_array())
    throw Error(what + ": want a JSON list of device IDs such as [\"GPU-1\"], got " + shown(value));
  if (list.size() > kMaxIds) throw Error(what + ": more than " + std::to_string(kMaxIds) + " device IDs");
  std::vector<std::string> ids;
  for (const auto& id : list) {
    if (!id.is_string() || id.get_ref<const std::string&>().empty() ||
        id.get_ref<const std::string&>().size() > kMaxIdBytes || contains_control(id.get_ref<const std::string&>()))
      throw Error(what + ": device ID " + shown_json(id) + " is not a non-empty string of printable characters");
    if (std::find(ids.begin(), ids.end(), id.get<std::string>()) == ids.end()) ids.push_back(id.get<std::string>());
  }
  return ids;
}

HostNode stat_host_node(const std::string& host_path) {
  struct stat st {};
  if (::stat(host_path.c_str(), &st) != 0) throw_errno("stat host device `" + host_path + "`");
  if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
    throw Error("host device `" + host_path + "` is not a character or block device node");
  return HostNode{S_ISCHR(st.st_mode) ? 'c' : 'b',
                  static_cast<std::int64_t>(major(st.st_rdev)),
                  static_cast<std::int64_t>(minor(st.st_rdev)),
                  static_cast<std::uint32_t>(st.st_mode & 07777),
                  st.st_uid,
                  st.st_gid};
}

PreparedAnswer prepare_answer(const kubelet::AllocateResponse& answer, const NodeLookup& lookup) {
  PreparedAnswer p;
  for (const auto& [key, value] : answer.envs) {
    if (key.empty() || key.find('=') != std::string::npos || contains_control(key))
      throw Error("env name " + shown(key) + " is not a valid variable name");
    if (value.find('\0') != std::string::npos) throw Error("env " + key + ": value holds a NUL byte");
    p.envs.emplace_back(key, value);
  }
  for (const auto& [key, value] : answer.annotations) {
    if (key.empty() || contains_control(key)) throw Error("annotation name " + shown(key) + " is not valid");
    p.annotations.emplace_back(key, value);
  }
  for (const auto& m : answer.mounts) {
    check_path(m.container_path, "mount container path");
    check_path(m.host_path, "mount host path");
    p.mounts.push_back(Json{{"destination", normal(m.container_path)},
                            {"type", "bind"},
                            {"source", m.host_path},
                            {"options", {"rbind", "rprivate", m.read_only ? "ro" : "rw"}}});
  }
  for (const auto& d : answer.devices) {
    check_path(d.container_path, "device container path");
    check_path(d.host_path, "device host path");
    std::string access = d.permissions.empty() ? "rwm" : d.permissions;
    if (access.find_first_not_of("rwm") != std::string::npos)
      throw Error("device " + d.container_path + ": permissions " + shown(d.permissions) + " are not a subset of rwm");
    HostNode n = lookup(d.host_path);
    std::string type(1, n.type);
    p.devices.push_back(
        {normal(d.container_path), d.host_path,
         Json{{"path", normal(d.container_path)},
              {"type", type},
              {"major", n.major},
              {"minor", n.minor},
              {"fileMode", n.mode},
              {"uid", n.uid},
              {"gid", n.gid}},
         Json{{"allow", true}, {"type", type}, {"major", n.major}, {"minor", n.minor}, {"access", access}}});
  }
  for (const auto& name : answer.cdi_devices) {
    auto eq = name.find('=');
    auto slash = name.find('/');
    if (eq == std::string::npos || slash == std::string::npos || slash > eq ||
        name.find_first_of(", \t") != std::string::npos || contains_control(name))
      throw Error("CDI device name " + shown(name) + " is not vendor/class=name");
    p.cdi_devices.push_back(name);
  }
  return p;
}

bool merge_list_annotation(Spec& spec, std::string_view key, const std::vector<std::string>& items) {
  std::string k(key);
  const Json* annotations = spec.find({"annotations"});
  std::string value;
  if (annotations && annotations->is_object() && annotations->contains(k)) {
    const Json& v = (*annotations)[k];
    if (!v.is_string()) throw Error("annotation `" + k + "`: must be a string");
    value = v.get<std::string>();
  }
  std::vector<std::string> have;
  for (auto item : split_list(value, " \t")) have.emplace_back(item);
  std::string added;
  for (const auto& item : items) {
    if (std::find(have.begin(), have.end(), item) != have.end()) continue;
    have.push_back(item);
    added += (added.empty() ? "" : ",") + item;
  }
  if (added.empty()) return false;
  bool separated = value.find_first_not_of(" \t") == std::string::npos || value.back() == ',';
  spec.object_at({"annotations"})[k] = value + (separated ? "" : ",") + added;
  return true;
}

bool merge_answer(Spec& spec, const PreparedAnswer& answer, std::string_view resource,
                  std::vector<std::string>& conflicts) {
  bool changed = merge_env(spec, answer, conflicts);
  changed |= merge_annotations(spec, answer, conflicts);
  changed |= merge_mounts(spec, answer, conflicts);
  changed |= merge_devices(spec, answer, conflicts);
  changed |= merge_list_annotation(spec, kCdiDevices, answer.cdi_devices);
  changed |= merge_list_annotation(spec, kResources, {std::string(resource)});
  return changed;
}

}  // namespace specshim::device_plugin
