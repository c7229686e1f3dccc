// SPDX-License-Identifier: Apache-2.0
// The desired-state file of declarative hot-plug, the --device argument, and
// the grant file the hotplug modifier leaves in the bundle.
#include "specshim/node/hotplug.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>

#include "cdi/document_fields.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/host_device.h"
#include "specshim/base/spec.h"
#include "specshim/node/cdi.h"

namespace specshim::hotplug {
namespace {

// ---- the desired-state file ----

using cdi::Node;

// text_field reads a name or path as written: a plain YAML scalar is not
// typed (a namespace `no` or `0123` stays that, not false or 83).
std::string text_field(const Node& v, const std::string& at) {
  if (v.type != Node::Type::plain && v.type != Node::Type::string)
    cdi::fail(v.line, at, "want a non-empty string, got " + cdi::describe(v));
  if (v.text.empty()) cdi::fail(v.line, at, "want a non-empty string");
  if (contains_control(v.text)) cdi::fail(v.line, at, "contains control characters");
  return v.text;
}

PodSelector decode_pod(const Node& n, const std::string& where) {
  if (n.type != Node::Type::mapping) cdi::fail(n.line, where, "want {namespace, name, container}");
  PodSelector p;
  cdi::for_fields(n, where, {"namespace", "name", "container"},
                  [&](std::string_view f, const Node& v, const std::string& at) {
                    (f == "namespace" ? p.ns : f == "name" ? p.name : p.container) = text_field(v, at);
                  });
  for (auto [field, value] : {std::pair{"namespace", &p.ns}, {"name", &p.name}, {"container", &p.container}})
    if (value->empty()) cdi::fail(n.line, where, std::string("missing `") + field + "`");
  return p;
}

std::vector<std::string> strings_field(const Node& v, const std::string& at) {
  std::vector<std::string> out;
  cdi::for_items(v, at, [&](const Node& item, const std::string& i) { out.push_back(text_field(item, i)); });
  return out;
}

std::string decode_docker(const Node& n, const std::string& where) {
  if (n.type != Node::Type::mapping) cdi::fail(n.line, where, "want {name}");
  std::string name;
  cdi::for_fields(n, where, {"name"}, [&](std::string_view, const Node& v, const std::string& at) {
    name = text_field(v, at);
    if (!docker::is_name(name))
      cdi::fail(v.line, at, q(name) + " is not a name dockerd gives ([a-zA-Z0-9][a-zA-Z0-9_.-]*)");
  });
  if (name.empty()) cdi::fail(n.line, where, "missing `name`");
  return name;
}

Entry decode_entry(const Node& n, const std::string& where) {
  Entry e;
  e.line = n.line;
  cdi::for_fields(n, where, {"pod", "id", "docker", "devices", "cdi", "gpus", "shared"},
                  [&](std::string_view f, const Node& v, const std::string& at) {
                    if (f == "pod") {
                      e.pod = decode_pod(v, at);
                    } else if (f == "docker") {
                      e.docker = decode_docker(v, at);
                    } else if (f == "id") {
                      e.id = text_field(v, at);
                    } else if (f == "devices") {
                      cdi::for_items(v, at, [&](const Node& item, const std::string& i) {
                        std::string text = text_field(item, i);
                        try {
                          e.devices.push_back(parse_device_arg(text));
                        } catch (const Error& err) {
                          cdi::fail(item.line, i, err.what());
                        }
                      });
                    } else if (f == "cdi") {
                      cdi::for_items(v, at, [&](const Node& item, const std::string& i) {
                        std::string name = text_field(item, i);
                        std::string why;
                        if (!cdi::parse_qualified_name(name, &why))
                          cdi::fail(item.line, i, "CDI name " + q(name) + ": " + why);
                        e.cdi.push_back(name);
                      });
                    } else if (f == "gpus") {
                      e.gpus = strings_field(v, at);
                    } else {
                      e.shared = cdi::get_bool(v, at);
                    }
                  });
  int selectors = (e.pod ? 1 : 0) + (e.id.empty() ? 0 : 1) + (e.docker.empty() ? 0 : 1);
  if (selectors > 1) cdi::fail(n.line, where, "give one of `pod`, `id` and `docker`");
  if (selectors == 0) cdi::fail(n.line, where, "missing `pod`, `id` or `docker`: which container is this for?");
  return e;
}

// Resource is one host resource an entry wants, for the sharing check: what
// tells it apart (the node's numbers when node_key knows them) and its name.
struct Resource {
  std::string key;
  std::string name;
};

std::vector<Resource> resources(const Entry& e, const GpuNode& gpu_node, const NodeKey& node_key) {
  std::vector<Resource> out;
  auto device = [&](const std::string& path, const std::string& name) {
    std::string key = node_key ? node_key(path) : "";
    out.push_back({key.empty() ? "path " + path : key, name});
  };
  for (const auto& d : e.devices) device(d.host, "device " + q(d.host));
  for (const auto& g : e.gpus) {
    if (!gpu_node) {
      out.push_back({"gpu " + g, "GPU " + q(g)});
      continue;
    }
    std::string node = gpu_node(g);
    device(node, "GPU " + q(g) + " (" + node + ")");
  }
  for (const auto& c : e.cdi) out.push_back({"cdi " + c, "CDI device " + q(c)});
  return out;
}

// ---- the grant file ----

template <typename T>
T get(const Json& j, const char* key, const std::string& where) {
  return json_field<T>(j, key, where);
}

char kind_of(const Json& j, const std::string& w, std::string_view allowed) {
  auto t = get<std::string>(j, "type", w);
  if (t.size() != 1 || allowed.find(t[0]) == std::string_view::npos) throw Error(w + ": type " + q(t) + " is unknown");
  return t[0];
}

std::string access_of(const Json& j, const char* key, const std::string& w) {
  auto p = canonical_permissions(get<std::string>(j, key, w));
  if (!p) throw Error(w + ": " + q(key) + " must be a non-empty subset of rwm");
  return *p;
}

}  // namespace

// ---- --device ----

std::optional<std::string> canonical_permissions(std::string_view p) {
  if (p.empty()) return std::nullopt;
  std::string out;
  for (char want : std::string_view("rwm")) {
    auto n = std::count(p.begin(), p.end(), want);
    if (n > 1) return std::nullopt;
    if (n == 1) out += want;
  }
  if (out.size() != p.size()) return std::nullopt;
  return out;
}

DeviceArg parse_device_arg(std::string_view arg) {
  std::string what = "--device " + q(arg);
  if (contains_control(arg)) throw Error(what + ": contains control characters");
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    auto colon = arg.find(':', start);
    parts.emplace_back(arg.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3)
    throw Error(what + ": expected HOST[:CONTAINER[:PERMS]], got " + std::to_string(parts.size()) +
                " fields (paths with ':' are not supported)");
  DeviceArg d;
  d.host = parts[0];
  if (d.host.empty() || d.host[0] != '/') throw Error(what + ": host path " + q(d.host) + " must be absolute");
  d.container = parts.size() > 1 && !parts[1].empty() ? parts[1] : d.host;
  if (d.container[0] != '/') throw Error(what + ": container path " + q(d.container) + " must be absolute");
  if (parts.size() > 2) {
    auto p = canonical_permissions(parts[2]);
    if (!p) throw Error(what + ": permissions " + q(parts[2]) + " must be a non-empty subset of rwm");
    d.permissions = *p;
  }
  return d;
}

GrantedDevice device_of(const DeviceArg& a, const std::string& key) {
  std::string what = "device " + q(a.host);
  HostDevice h = resolve_device(a.host, "/dev", false);
  if (h.type != 'c' && h.type != 'b') throw Error(what + ": host node is a FIFO, not a character or block device");
  char buf[PATH_MAX];
  if (!::realpath(a.host.c_str(), buf)) throw_errno("resolve host device node " + q(a.host));
  struct stat st {};
  if (::stat(buf, &st) != 0) throw_errno("stat host device node " + q(buf));
  return GrantedDevice{key,     a.container,   buf,           h.type,    h.major,
                       h.minor, a.permissions, h.mode & 0777, st.st_uid, st.st_gid};
}

// ---- entries ----

std::string Entry::who() const {
  if (pod) return "pod " + q(pod->ns + "/" + pod->name) + " container " + q(pod->container);
  if (!docker.empty()) return "docker container " + q(docker);
  return "container " + q(id);
}

namespace {
constexpr std::pair<Want::Kind, std::string_view> kWantKinds[] = {
    {Want::Kind::device, "device "}, {Want::Kind::gpu, "gpu "}, {Want::Kind::cdi, "cdi "}};
}  // namespace

std::string Want::key() const {
  for (const auto& [k, prefix] : kWantKinds)
    if (k == kind) return std::string(prefix) + arg;
  return arg;
}

std::optional<Want> Want::parse(std::string_view key) {
  for (const auto& [k, prefix] : kWantKinds)
    if (key.substr(0, prefix.size()) == prefix) return Want{k, std::string(key.substr(prefix.size()))};
  return std::nullopt;
}

std::vector<Want> Entry::wants() const {
  std::vector<Want> out;
  for (const auto& d : devices) out.push_back({Want::Kind::device, d.host + ":" + d.container + ":" + d.permissions});
  for (const auto& g : gpus) out.push_back({Want::Kind::gpu, g});
  for (const auto& c : cdi) out.push_back({Want::Kind::cdi, c});
  return out;
}

std::vector<std::string> Entry::keys() const {
  std::vector<std::string> out;
  for (const auto& w : wants()) out.push_back(w.key());
  return out;
}

bool Entry::selects(const std::string& container_id, const pod_identity::Identity& identity,
                    const std::string& docker_name) const {
  if (!docker.empty()) return docker == docker_name;
  if (!pod) return id == container_id;
  return identity.cri && identity.pod.ns == pod->ns && identity.pod.name == pod->name &&
         identity.container == pod->container;
}

Desired parse_desired(std::string_view text, const std::string& file) {
  Desired d;
  d.file = file;
  try {
    if (text.size() > kMaxDesiredBytes) throw Error("larger than " + std::to_string(kMaxDesiredBytes) + " bytes");
    Node root = cdi::read_document(text);
    // An empty file is refused: a writer that truncates before it writes
    // (without the lock) must not make reconcile detach everything.
    bool listed = std::find(root.keys.begin(), root.keys.end(), "containers") != root.keys.end();
    if (root.type == Node::Type::null || (root.type == Node::Type::mapping && !listed))
      cdi::fail(root.line ? root.line : 1, "", "no `containers:` (write `containers: []` to want nothing)");
    cdi::for_fields(root, "", {"containers"}, [&](std::string_view, const Node& v, const std::string& at) {
      if (v.items.size() > kMaxEntries) cdi::fail(v.line, at, "more than " + std::to_string(kMaxEntries) + " entries");
      cdi::for_objects(v, at, [&](const Node& n, const std::string& i) { d.entries.push_back(decode_entry(n, i)); });
    });
    // Each container once, found by a map of the first entry for each, not
    // by comparing every entry with every earlier one.
    using Who = std::tuple<int, std::string_view, std::string_view, std::string_view>;
    std::map<Who, const Entry*> first;
    for (const Entry& b : d.entries) {
      Who who = b.pod              ? Who{0, b.pod->ns, b.pod->name, b.pod->container}
                : b.docker.empty() ? Who{1, b.id, {}, {}}
                                   : Who{2, b.docker, {}, {}};
      auto [it, fresh] = first.emplace(who, &b);
      if (!fresh) cdi::fail(b.line, "", b.who() + " is already listed at line " + std::to_string(it->second->line));
    }
    check_sharing(d);
  } catch (const Error& e) {
    std::throw_with_nested(Error(file));
  }
  return d;
}

void check_sharing(const Desired& d, const GpuNode& gpu_node, const NodeKey& node_key) {
  std::map<std::string, std::pair<const Entry*, std::string>> owner;  // key -> entry, its name for it
  for (const auto& e : d.entries)
    for (const auto& r : resources(e, gpu_node, node_key)) {
      auto [it, fresh] = owner.emplace(r.key, std::pair{&e, r.name});
      const auto& [first, first_name] = it->second;
      if (fresh || first == &e) continue;
      if (e.shared && first->shared) continue;
      std::string same = first_name == r.name ? "" : " (the same device as " + first_name + ")";
      throw Error("line " + std::to_string(e.line) + ": " + r.name + same + " is wanted by " + first->who() +
                  " (line " + std::to_string(first->line) + ") and by " + e.who() +
                  "; add `shared: true` to both entries to let them share it");
    }
}

std::optional<Desired> read_desired(const std::filesystem::path& file) {
  std::string lock_path = file.string() + ".lock";
  fs::Fd lock(::open(lock_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!lock && errno != ENOENT) throw_errno("open lock file " + q(lock_path));
  if (lock) fs::lock_within(lock.get(), LOCK_SH, std::chrono::seconds(10), lock_path, "a writer");
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_errno("stat " + q(file.string()));
  }
  return parse_desired(fs::read_regular_file(file, kMaxDesiredBytes), file.string());
}

bool Desired::names_docker() const {
  return std::any_of(entries.begin(), entries.end(), [](const Entry& e) { return !e.docker.empty(); });
}

std::string docker_name_of(const Desired& d, const Config& config, const std::string& container_id) {
  if (!d.names_docker()) return "";
  return docker::container_name(config.docker_root, container_id).value_or("");
}

const Entry* select(const Desired& d, const std::string& container_id, const pod_identity::Identity& identity,
                    const std::string& docker_name) {
  const Entry* found = nullptr;
  for (const auto& e : d.entries) {
    if (!e.selects(container_id, identity, docker_name)) continue;
    if (found)
      throw Error(d.where(e) + ": " + e.who() + " and " + found->who() + " (line " + std::to_string(found->line) +
                  ") select the same container; list its devices in one entry");
    found = &e;
  }
  return found;
}

// ---- the grant file ----

Json rule_json(const DeviceRule& r) {
  return Json{{"allow", r.allow},
              {"type", std::string(1, r.type)},
              {"major", r.major ? Json(*r.major) : Json()},
              {"minor", r.minor ? Json(*r.minor) : Json()},
              {"access", r.access}};
}

DeviceRule rule_from_json(const Json& j, const std::string& w) {
  if (!j.is_object()) throw Error(w + ": not an object");
  DeviceRule r;
  r.allow = get<bool>(j, "allow", w);
  r.type = kind_of(j, w, "acb");
  if (!j.value("major", Json()).is_null()) r.major = get<std::int64_t>(j, "major", w);
  if (!j.value("minor", Json()).is_null()) r.minor = get<std::int64_t>(j, "minor", w);
  r.access = access_of(j, "access", w);
  return r;
}

Json node_json(const GrantedDevice& d) {
  return Json{{"path", d.path},   {"hostPath", d.host_path},      {"type", std::string(1, d.type)}, {"major", d.major},
              {"minor", d.minor}, {"permissions", d.permissions}, {"fileMode", d.file_mode},        {"uid", d.uid},
              {"gid", d.gid}};
}

std::string grant_json(const CreateGrant& g) {
  Json devices = Json::array();
  for (const auto& d : g.devices) {
    Json j = {{"key", d.key}};
    j.update(node_json(d));
    devices.push_back(std::move(j));
  }
  Json rules = Json::array();
  for (const auto& r : g.rules) rules.push_back(rule_json(r));
  Json doc = {
      {"container", g.container}, {"desired", g.desired}, {"devices", devices}, {"rules", rules}, {"cdi", Json(g.cdi)}};
  return doc.dump(2) + "\n";
}

CreateGrant parse_grant(std::string_view text, const std::string& file) {
  std::string where = "grant " + q(file);
  Json doc = parse_json(text, "parse " + q(file));
  if (!doc.is_object()) throw Error(where + ": not a JSON object");
  CreateGrant g;
  g.container = get<std::string>(doc, "container", where);
  g.desired = get<std::string>(doc, "desired", where);
  auto list = [&](const char* key) {
    if (!doc.contains(key) || !doc[key].is_array()) throw Error(where + ": " + q(key) + " is not an array");
    return Json(doc[key]);
  };
  auto u32 = [](const Json& j, const char* key, const std::string& w) {
    auto v = get<std::int64_t>(j, key, w);
    if (v < 0 || v > std::numeric_limits<std::uint32_t>::max()) throw Error(w + ": " + q(key) + ": out of range");
    return static_cast<std::uint32_t>(v);
  };
  std::size_t i = 0;
  for (const auto& j : list("devices")) {
    std::string w = where + ": devices[" + std::to_string(i++) + "]";
    if (!j.is_object()) throw Error(w + ": not an object");
    g.devices.push_back({get<std::string>(j, "key", w), get<std::string>(j, "path", w),
                         get<std::string>(j, "hostPath", w), kind_of(j, w, "cb"), get<std::int64_t>(j, "major", w),
                         get<std::int64_t>(j, "minor", w), access_of(j, "permissions", w), u32(j, "fileMode", w),
                         u32(j, "uid", w), u32(j, "gid", w)});
  }
  i = 0;
  for (const auto& j : list("rules"))
    g.rules.push_back(rule_from_json(j, where + ": rules[" + std::to_string(i++) + "]"));
  g.cdi = get<std::vector<std::string>>(doc, "cdi", where);
  return g;
}

std::optional<CreateGrant> read_grant(const std::filesystem::path& bundle) {
  std::filesystem::path file = bundle / kGrantFile;
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    throw_errno("stat " + q(file.string()));
  }
  return parse_grant(fs::read_regular_file(file, 4 << 20), file.string());
}

}  // namespace specshim::hotplug
