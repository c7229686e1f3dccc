// SPDX-License-Identifier: Apache-2.0
#include "specshim/node/userns.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"

namespace specshim::userns {
namespace {

std::uint32_t id_field(const Json& range, const char* key, const std::string& where) {
  auto it = range.find(key);
  if (it == range.end() || !it->is_number_unsigned() || it->get<std::uint64_t>() > UINT32_MAX)
    throw Error(fmt::format("{}.{} must be an id from 0 to {}", where, key, UINT32_MAX));
  return static_cast<std::uint32_t>(it->get<std::uint64_t>());
}

IdMap read_map(const Spec& spec, const char* key) {
  IdMap map;
  const Json* list = spec.find({"linux", key});
  if (!list || list->is_null()) return map;
  if (!list->is_array()) throw Error(fmt::format("linux.{} is not an array", key));
  for (std::size_t i = 0; i < list->size(); ++i) {
    std::string where = fmt::format("linux.{}[{}]", key, i);
    const Json& r = (*list)[i];
    if (!r.is_object()) throw Error(where + " is not an object");
    IdRange range{id_field(r, "containerID", where), id_field(r, "hostID", where), id_field(r, "size", where)};
    std::uint64_t size = range.size;
    if (size == 0 || range.container + size - 1 > UINT32_MAX || range.host + size - 1 > UINT32_MAX)
      throw Error(fmt::format("{}: size {} is empty or runs past id {}", where, size, UINT32_MAX));
    map.ranges.push_back(range);
  }
  return map;
}

}  // namespace

std::optional<std::uint32_t> IdMap::to_host(std::uint32_t container) const {
  for (const auto& r : ranges)
    if (container >= r.container && container - r.container < r.size) return r.host + (container - r.container);
  return std::nullopt;
}

std::optional<std::uint32_t> IdMap::to_container(std::uint32_t host) const {
  for (const auto& r : ranges)
    if (host >= r.host && host - r.host < r.size) return r.container + (host - r.host);
  return std::nullopt;
}

std::string IdMap::describe() const {
  if (ranges.empty()) return "no ranges";
  std::string out;
  for (const auto& r : ranges) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}-{} → {}-{}", r.container, r.container + (r.size - 1), r.host, r.host + (r.size - 1));
  }
  return out;
}

namespace {

// is_user_namespace tells a linux.namespaces entry of type "user", without
// a copy of its type: the cdi modifier asks once per device node.
bool is_user_namespace(const Json& n) {
  if (!n.is_object()) return false;
  auto type = n.find("type");
  return type != n.end() && type->is_string() && type->get_ref<const std::string&>() == "user";
}

}  // namespace

bool has_user_namespace(const Spec& spec) {
  if (const Json* ns = spec.find({"linux", "namespaces"}); ns && ns->is_array())
    for (const auto& n : *ns)
      if (is_user_namespace(n)) return true;
  for (auto key : {"uidMappings", "gidMappings"})
    if (const Json* m = spec.find({"linux", key}); m && m->is_array() && !m->empty()) return true;
  return false;
}

IdMap parse_id_map(std::string_view text, const std::string& what) {
  IdMap map;
  std::size_t line = 0;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view l = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line;
    std::uint64_t v[3] = {};
    for (auto& n : v) {
      l.remove_prefix(std::min(l.find_first_not_of(' '), l.size()));
      auto [end, ec] = std::from_chars(l.data(), l.data() + l.size(), n);
      if (ec != std::errc() || n > UINT32_MAX)
        throw Error(fmt::format("{}: line {} is not `inside outside count`", what, line));
      l.remove_prefix(static_cast<std::size_t>(end - l.data()));
    }
    if (l.find_first_not_of(' ') != std::string_view::npos || v[2] == 0 || v[0] + v[2] - 1 > UINT32_MAX ||
        v[1] + v[2] - 1 > UINT32_MAX)
      throw Error(fmt::format("{}: line {} is not `inside outside count`", what, line));
    map.ranges.push_back(
        {static_cast<std::uint32_t>(v[0]), static_cast<std::uint32_t>(v[1]), static_cast<std::uint32_t>(v[2])});
  }
  return map;
}

std::optional<UserNamespace> read(const Spec& spec, const std::filesystem::path& proc_root) {
  if (!has_user_namespace(spec)) return std::nullopt;
  UserNamespace u;
  if (const Json* ns = spec.find({"linux", "namespaces"}); ns && ns->is_array())
    for (const auto& n : *ns)
      if (is_user_namespace(n) && n.contains("path") && n["path"].is_string()) u.path = n["path"].get<std::string>();
  u.uids = read_map(spec, "uidMappings");
  u.gids = read_map(spec, "gidMappings");
  if (u.path.empty() || !u.uids.empty() || !u.gids.empty()) return u;
  // /proc/PID/ns/user: the process's maps are the namespace's.
  std::string_view p = u.path;
  constexpr std::string_view kProc = "/proc/", kNs = "/ns/user";
  if (p.size() <= kProc.size() + kNs.size() || p.substr(0, kProc.size()) != kProc ||
      p.substr(p.size() - kNs.size()) != kNs)
    return u;
  std::string_view pid = p.substr(kProc.size(), p.size() - kProc.size() - kNs.size());
  if (pid.find_first_not_of("0123456789") != std::string_view::npos) return u;
  for (auto [file, map] : {std::pair{"uid_map", &u.uids}, std::pair{"gid_map", &u.gids}}) {
    std::filesystem::path f = proc_root / std::string(pid) / file;
    *map = parse_id_map(fs::read_regular_file(f, 1 << 16), "user namespace `" + u.path + "`: " + f.string());
  }
  return u;
}

Json device_bind_mount(const std::string& container_path, const std::string& host_path) {
  return Json{{"destination", container_path},
              {"type", "bind"},
              {"source", host_path},
              {"options", Json::array({std::string(kDeviceBindOption)})}};
}

bool binds_device(const Spec& spec, std::string_view container_path, std::string_view host_path) {
  return !host_path.empty() && host_path != container_path && has_user_namespace(spec);
}

bool erase_device_entry(Spec& spec, std::string_view path) {
  const Json* list = spec.find({"linux", "devices"});
  auto at_path = [&](const Json& e) {
    return e.is_object() && e.contains("path") && e["path"].is_string() &&
           e["path"].get_ref<const std::string&>() == path;
  };
  if (!list || !list->is_array() || std::none_of(list->begin(), list->end(), at_path)) return false;
  Json& devices = spec.array_at({"linux", "devices"});
  devices.erase(std::remove_if(devices.begin(), devices.end(), at_path), devices.end());
  return true;
}

}  // namespace specshim::userns
