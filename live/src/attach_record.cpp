// SPDX-License-Identifier: Apache-2.0
// <bundle>/specshim-attached.json, and how messages name what it records.
#include "specshim/live/attach_record.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/spec.h"
#include "specshim/node/nri_status.h"

namespace specshim::live::attach {
namespace {

template <typename T>
T get(const Json& j, const char* key, const std::string& where) {
  return json_field<T>(j, key, where);
}

std::uint32_t get_u32(const Json& j, const char* key, const std::string& where) {
  auto v = get<std::int64_t>(j, key, where);
  if (v < 0 || v > std::numeric_limits<std::uint32_t>::max()) throw Error(where + ": " + q(key) + ": out of range");
  return static_cast<std::uint32_t>(v);
}

std::vector<std::string> strings(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) return {};
  return get<std::vector<std::string>>(j, key, where);
}

Json array_of(const std::vector<std::string>& v) {
  return Json(v);
}

}  // namespace

std::string record_json(const Record& r) {
  Json devices = Json::array();
  for (const auto& d : r.devices) {
    Json j = hotplug::node_json(
        {"", d.path, d.host_path, d.type, d.major, d.minor, d.permissions, d.file_mode, d.uid, d.gid});
    j.update(Json{{"node", d.node}, {"direct", d.direct}, {"cdi", array_of(d.cdi)}});
    if (!d.reconcile.empty()) j["reconcile"] = array_of(d.reconcile);
    devices.push_back(std::move(j));
  }
  Json mounts = Json::array();
  for (const auto& m : r.mounts) {
    Json j = {{"path", m.path},     {"hostPath", m.host_path}, {"options", array_of(m.options)},
              {"target", m.target}, {"mounted", m.mounted},    {"cdi", array_of(m.cdi)}};
    if (!m.reconcile.empty()) j["reconcile"] = array_of(m.reconcile);
    mounts.push_back(std::move(j));
  }
  Json not_applied = Json::array();
  for (const auto& n : r.not_applied) not_applied.push_back({{"cdi", n.cdi}, {"edit", n.edit}, {"value", n.value}});
  Json doc = {{"version", kRecordVersion}, {"container", r.container},  {"devices", devices},
              {"mounts", mounts},          {"notApplied", not_applied}, {"dirs", array_of(r.dirs)}};
  if (!r.create_rules.empty()) {
    Json rules = Json::array();
    for (const auto& rule : r.create_rules) rules.push_back(hotplug::rule_json(rule));
    doc["createRules"] = rules;
  }
  if (!r.create_cdi.empty()) doc["createCdi"] = array_of(r.create_cdi);
  if (!r.reconciled.empty()) doc["reconciled"] = array_of(r.reconciled);
  return doc.dump(2) + "\n";
}

Record parse_record(std::string_view text, const std::string& file) {
  Json doc = parse_json(text, "parse " + q(file));
  std::string where = "record " + q(file);
  if (!doc.is_object()) throw Error(where + ": not a JSON object");
  auto version = get<int>(doc, "version", where);
  if (version != kRecordVersion)
    throw Error(where + ": version " + std::to_string(version) + " is not " + std::to_string(kRecordVersion) +
                " (written by another specshim version)");
  Record r;
  r.container = get<std::string>(doc, "container", where);
  auto list = [&](const char* key) {
    if (!doc.contains(key)) return Json::array();
    if (!doc[key].is_array()) throw Error(where + ": " + q(key) + " is not an array");
    return Json(doc[key]);
  };
  std::size_t i = 0;
  for (const auto& j : list("devices")) {
    std::string w = where + ": devices[" + std::to_string(i++) + "]";
    if (!j.is_object()) throw Error(w + ": not an object");
    RecordedDevice d;
    d.path = get<std::string>(j, "path", w);
    d.host_path = get<std::string>(j, "hostPath", w);
    auto type = get<std::string>(j, "type", w);
    if (type != "c" && type != "b") throw Error(w + ": type " + q(type) + " is not c or b");
    d.type = type[0];
    d.major = get<std::int64_t>(j, "major", w);
    d.minor = get<std::int64_t>(j, "minor", w);
    auto perms = canonical_permissions(get<std::string>(j, "permissions", w));
    if (!perms) throw Error(w + ": permissions must be a non-empty subset of rwm");
    d.permissions = *perms;
    d.file_mode = get_u32(j, "fileMode", w);
    d.uid = get_u32(j, "uid", w);
    d.gid = get_u32(j, "gid", w);
    d.node = get<std::string>(j, "node", w);
    if (d.node != "mknod" && d.node != "bind" && d.node != "existing" && d.node != "create")
      throw Error(w + ": node " + q(d.node) + " is unknown");
    d.direct = j.contains("direct") && get<bool>(j, "direct", w);
    d.cdi = strings(j, "cdi", w);
    d.reconcile = strings(j, "reconcile", w);
    r.devices.push_back(std::move(d));
  }
  i = 0;
  for (const auto& j : list("mounts")) {
    std::string w = where + ": mounts[" + std::to_string(i++) + "]";
    if (!j.is_object()) throw Error(w + ": not an object");
    RecordedMount m;
    m.path = get<std::string>(j, "path", w);
    m.host_path = get<std::string>(j, "hostPath", w);
    m.options = strings(j, "options", w);
    m.target = get<std::string>(j, "target", w);
    m.mounted = get<bool>(j, "mounted", w);
    m.cdi = strings(j, "cdi", w);
    m.reconcile = strings(j, "reconcile", w);
    r.mounts.push_back(std::move(m));
  }
  i = 0;
  for (const auto& j : list("notApplied")) {
    std::string w = where + ": notApplied[" + std::to_string(i++) + "]";
    if (!j.is_object()) throw Error(w + ": not an object");
    r.not_applied.push_back(
        {get<std::string>(j, "cdi", w), get<std::string>(j, "edit", w), get<std::string>(j, "value", w)});
  }
  r.dirs = strings(doc, "dirs", where);
  i = 0;
  for (const auto& j : list("createRules"))
    r.create_rules.push_back(hotplug::rule_from_json(j, where + ": createRules[" + std::to_string(i++) + "]"));
  r.create_cdi = strings(doc, "createCdi", where);
  r.reconciled = strings(doc, "reconciled", where);
  for (const auto& d : r.dirs)
    if (d.empty() || d[0] != '/') throw Error(where + ": dirs: " + q(d) + " is not an absolute path");
  return r;
}

std::optional<Record> read_record(const std::filesystem::path& bundle, const std::string& id) {
  std::filesystem::path file = bundle / kRecordFile;
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_errno("stat `" + file.string() + "`");
  }
  Record r = parse_record(fs::read_regular_file(file, 4 << 20), file.string());
  if (r.container != id)
    throw Error("record `" + file.string() + "` is for container `" + r.container + "`, not `" + id + "`");
  return r;
}

Record current_record(const std::filesystem::path& bundle, const std::string& id,
                      const std::filesystem::path& nri_state_dir) {
  if (auto r = read_record(bundle, id)) return *r;
  Record r{id, {}, {}, {}, {}, {}, {}, {}};
  std::filesystem::path dir = bundle;
  auto grant = hotplug::read_grant(dir);
  if (!grant && !nri_state_dir.empty() && NriSettings::is_container_id(id)) {
    dir = nri_state_dir / id;
    grant = hotplug::read_grant(dir);
  }
  if (!grant) return r;
  if (grant->container != id)
    throw Error("`" + (dir / hotplug::kGrantFile).string() + "` is for container `" + grant->container + "`, not `" +
                id + "`");
  for (const auto& g : grant->devices) {
    auto same = std::find_if(r.devices.begin(), r.devices.end(), [&](const auto& d) { return d.path == g.path; });
    if (same != r.devices.end()) {
      same->reconcile.push_back(g.key);
      continue;
    }
    RecordedDevice d{g.path, g.host_path, g.type,   g.major, g.minor, g.permissions, g.file_mode,
                     g.uid,  g.gid,       "create", false,   {},      {g.key}};
    r.devices.push_back(std::move(d));
  }
  r.create_rules = grant->rules;
  r.create_cdi = grant->cdi;
  for (const auto& g : grant->devices) r.reconciled.push_back(g.key);
  for (const auto& c : grant->cdi) r.reconciled.push_back(hotplug::Want{hotplug::Want::Kind::cdi, c}.key());
  return r;
}

std::vector<DeviceRule> enforced_rules(const Spec& spec, const std::vector<DeviceRule>& create_rules,
                                       const std::vector<RecordedDevice>& devices) {
  std::vector<live::DeviceRule> rules = live::container_rules(spec);
  for (const auto& c : create_rules) {
    auto it = std::find(rules.rbegin(), rules.rend(), c);
    if (it != rules.rend()) rules.erase(std::next(it).base());
  }
  for (const auto& d : devices) rules.push_back(live::DeviceRule{true, d.type, d.major, d.minor, d.permissions});
  return rules;
}

std::string numbers(const RecordedDevice& d) {
  return std::string(1, d.type) + " " + std::to_string(d.major) + ":" + std::to_string(d.minor);
}

std::string attached_by(const RecordedDevice& d) {
  std::vector<std::string> by;
  if (d.direct) by.push_back("--device " + d.host_path);
  for (const auto& n : d.cdi) by.push_back("--cdi " + n);
  if (d.node == "create" && !d.reconcile.empty())
    by.push_back("create (" + join(d.reconcile, ", ") + ")");
  else if (!d.reconcile.empty())
    by.push_back("reconcile (" + join(d.reconcile, ", ") + ")");
  return join(by, ", ");
}

}  // namespace specshim::live::attach
