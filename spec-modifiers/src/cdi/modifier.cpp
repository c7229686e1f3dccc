// SPDX-License-Identifier: Apache-2.0
// The cdi modifier: resolves the CDI devices a container asks for (through
// cdi.k8s.io/* annotations and specshim.io/cdi-devices) against the spec dirs
// and applies their containerEdits to config.json with the semantics of
// container-device-interface v1.1.0 (pkg/cdi/cache.go InjectDevices,
// container-edits.go Apply). Applying is idempotent: an edit already present
// is not added again. Deviations from upstream are listed in docs/cdi.md.
#include <algorithm>
#include <deque>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cdi/requests.h"
#include "specshim/base/error.h"
#include "specshim/base/host_device.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/factories.h"
#include "specshim/node/cdi.h"
#include "specshim/node/cdi_cache.h"
#include "specshim/node/userns.h"

namespace specshim {
namespace {

using cdi::ContainerEdits;
using cdi::DeviceNode;
using cdi::quote;

// ---- containerEdits → OCI ----

// Merged is the edits of every part of a create, concatenated as upstream's
// ContainerEdits.Append does (lists appended, intelRdt replaced by the last
// one given). It points into the spec files' edits instead of copying them:
// NVIDIA's spec-level edits alone are 40 mounts. Device nodes are copies, to
// be completed from the host; mounts made here (a node bound in a user
// namespace) live in own_mounts.
struct Merged {
  std::vector<const std::string*> env;
  std::vector<DeviceNode> device_nodes;
  std::vector<const cdi::NetDevice*> net_devices;
  std::vector<const cdi::Hook*> hooks;
  std::vector<const cdi::Mount*> mounts;
  std::deque<cdi::Mount> own_mounts;
  const cdi::IntelRdt* intel_rdt = nullptr;
  std::vector<std::uint32_t> additional_gids;

  void add(const ContainerEdits& e) {
    auto point = [](auto& into, const auto& from) {
      for (const auto& x : from) into.push_back(&x);
    };
    point(env, e.env);
    device_nodes.insert(device_nodes.end(), e.device_nodes.begin(), e.device_nodes.end());
    point(net_devices, e.net_devices);
    point(hooks, e.hooks);
    point(mounts, e.mounts);
    if (e.intel_rdt) intel_rdt = &*e.intel_rdt;
    additional_gids.insert(additional_gids.end(), e.additional_gids.begin(), e.additional_gids.end());
  }
};

// Members builds a JSON object in the order members are added, with room
// for all of them reserved first (a growing member vector copies its keys):
// a create with NVIDIA's spec builds ~50 of these.
class Members {
 public:
  explicit Members(std::size_t n) { members_.reserve(n); }
  Members& add(std::string_view key, Json value) {
    members_.emplace_back(std::string(key), std::move(value));
    return *this;
  }
  Json json() { return Json(std::move(members_)); }  // once: it moves the members out

 private:
  Json::object_t members_;
};

Json oci_device(const DeviceNode& d) {
  Members j(7);
  j.add("path", d.path).add("type", d.type).add("major", d.major).add("minor", d.minor);
  if (d.file_mode) j.add("fileMode", *d.file_mode);
  if (d.uid) j.add("uid", *d.uid);
  if (d.gid) j.add("gid", *d.gid);
  return j.json();
}

Json oci_rule(const DeviceNode& d) {
  return Members(5)
      .add("allow", true)
      .add("type", d.type)
      .add("major", d.major)
      .add("minor", d.minor)
      .add("access", d.permissions.empty() ? "rwm" : d.permissions)
      .json();
}

Json oci_mount(const cdi::Mount& m) {
  Members j(4);
  j.add("destination", m.container_path);
  if (!m.type.empty()) j.add("type", m.type);
  j.add("source", m.host_path);
  if (!m.options.empty()) j.add("options", m.options);
  return j.json();
}

// is_oci_mount reports whether j is exactly oci_mount(m), without building
// it: the chain's later passes find every mount already there, and building
// 40 mounts to compare them was most of a pass.
bool is_oci_mount(const Json& j, const cdi::Mount& m) {
  if (!j.is_object() || j.size() != std::size_t{2} + (m.type.empty() ? 0 : 1) + (m.options.empty() ? 0 : 1))
    return false;
  auto it = j.begin();
  auto next_is = [&](std::string_view key, const std::string& value) {
    bool same = it.key() == key && it->is_string() && it->get_ref<const std::string&>() == value;
    ++it;
    return same;
  };
  if (!next_is("destination", m.container_path) || (!m.type.empty() && !next_is("type", m.type)) ||
      !next_is("source", m.host_path))
    return false;
  if (m.options.empty()) return true;
  if (it.key() != "options" || !it->is_array() || it->size() != m.options.size()) return false;
  for (std::size_t i = 0; i < m.options.size(); ++i) {
    const Json& o = (*it)[i];
    if (!o.is_string() || o.get_ref<const std::string&>() != m.options[i]) return false;
  }
  return true;
}

Json oci_hook(const cdi::Hook& h) {
  Members j(4);
  j.add("path", h.path);
  if (!h.args.empty()) j.add("args", h.args);
  if (!h.env.empty()) j.add("env", h.env);
  if (h.timeout) j.add("timeout", *h.timeout);
  return j.json();
}

Json oci_intel_rdt(const cdi::IntelRdt& r) {
  Json j = Json::object();
  if (!r.clos_id.empty()) j["closID"] = r.clos_id;
  if (!r.l3_cache_schema.empty()) j["l3CacheSchema"] = r.l3_cache_schema;
  if (!r.mem_bw_schema.empty()) j["memBwSchema"] = r.mem_bw_schema;
  if (r.schemata && !r.schemata->empty()) j["schemata"] = *r.schemata;
  if (r.enable_monitoring) j["enableMonitoring"] = true;
  return j;
}

// destination is a mount's destination string, or null when it has none.
const Json* destination(const Json& mount) {
  if (!mount.is_object()) return nullptr;
  auto it = mount.find("destination");
  return it != mount.end() && it->is_string() ? &*it : nullptr;
}

// path_depth counts the '/' in Go's filepath.Clean(path), the key
// upstream sorts mounts by. Clean leaves `ups` leading ".." (relative paths
// only) and then `depth` names; no part is copied.
std::size_t path_depth(std::string_view path) {
  bool rooted = !path.empty() && path[0] == '/';
  std::size_t ups = 0, depth = 0;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    std::string_view part =
        path.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part == "..") {
      if (depth > 0)
        --depth;
      else if (!rooted)
        ++ups;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  std::size_t parts = ups + depth;
  if (rooted) return std::max<std::size_t>(parts, 1);
  return parts == 0 ? 0 : parts - 1;
}

// mount_depth is path_depth of a mount's destination.
std::size_t mount_depth(const Json& mount) {
  const Json* dest = destination(mount);
  return path_depth(dest ? std::string_view(dest->get_ref<const std::string&>()) : std::string_view());
}

// put_unique appends value to list unless an equal element is there.
bool put_unique(Json& list, const Json& value) {
  if (std::find(list.begin(), list.end(), value) != list.end()) return false;
  list.push_back(value);
  return true;
}

// Injector writes merged edits into the spec in upstream's order: env, device
// nodes (+ cgroup rules), net devices, mounts (then sorted), hooks, intelRdt,
// additional gids. Every step leaves an edit that is already there alone.
class Injector {
 public:
  explicit Injector(Spec& spec) : spec_(spec) {}

  void env(const std::vector<const std::string*>& env) {
    if (env.empty()) return;
    Json& list = spec_.array_at({"process", "env"});
    for (const std::string* edit : env) {
      const std::string& kv = *edit;
      std::string key = kv.substr(0, kv.find('=') + 1);
      auto same_key = std::find_if(list.begin(), list.end(), [&](const Json& e) {
        return e.is_string() && e.get_ref<const std::string&>().rfind(key, 0) == 0;
      });
      if (same_key == list.end())
        list.push_back(kv);
      else
        *same_key = kv;
    }
  }

  void device_nodes(const std::vector<DeviceNode>& nodes) {
    if (nodes.empty()) return;
    for (const auto& d : nodes) {
      if (userns::binds_device(spec_, d.path, d.host_path))
        userns::erase_device_entry(spec_, d.path);  // its bind mount comes with the mounts
      else
        put_entry(oci_device(d));
      if (d.type == "b" || d.type == "c") put_unique(spec_.array_at({"linux", "resources", "devices"}), oci_rule(d));
    }
  }

  // put_entry writes a linux.devices entry, replacing one at its path.
  // Looked up per node: adding linux.resources inserts into the `linux`
  // object and moves its members.
  void put_entry(Json entry) {
    Json& devices = spec_.array_at({"linux", "devices"});
    auto same_path = std::find_if(devices.begin(), devices.end(), [&](const Json& e) {
      return e.is_object() && e.contains("path") && e["path"] == entry["path"];
    });
    if (same_path == devices.end())
      devices.push_back(std::move(entry));
    else
      *same_path = std::move(entry);
  }

  void net_devices(const std::vector<const cdi::NetDevice*>& nets) {
    if (nets.empty()) return;
    Json& map = spec_.object_at({"linux", "netDevices"});
    for (const auto* n : nets) map[n->host_interface_name] = Json{{"name", n->name}};
  }

  // mounts writes the CDI mounts so that the result depends only on the
  // spec's other mounts and the final CDI mount set, never on what an earlier
  // run (containerd's own CDI, a retried create) left: of several CDI mounts
  // at one destination the last wins, at the place of its last mention (as
  // upstream's remove-then-append gives); every spec mount at a CDI
  // destination is replaced (upstream removes only the first, which a second
  // run would then find again); the CDI mounts follow the others, and the
  // whole list is sorted stably by depth (upstream's sortMounts). Run again
  // on its own output it finds that order and changes nothing. The spec's
  // mounts are found through an index by destination, built once, not by a
  // scan per mount: NVIDIA's specs carry 40 and more.
  void mounts(const std::vector<const cdi::Mount*>& mounts) {
    if (mounts.empty()) return;
    std::unordered_map<std::string_view, std::size_t> last;  // destination -> index of its last CDI mount
    for (std::size_t i = 0; i < mounts.size(); ++i) last[mounts[i]->container_path] = i;

    // The spec's mounts outside the CDI destinations keep their order; at a
    // CDI destination, the first one already written exactly as wanted is
    // reused (no new JSON), every other one goes.
    const Json* before = std::as_const(spec_).find({"mounts"});
    constexpr std::size_t kNew = static_cast<std::size_t>(-1);
    std::vector<std::size_t> reuse(mounts.size(), kNew);  // per CDI mount: the spec's mount it reuses
    // (depth, slot): slot < n is the spec's mount there, else mounts[slot - n].
    std::vector<std::pair<std::size_t, std::size_t>> order;
    const std::size_t n = before && before->is_array() ? before->size() : 0;
    order.reserve(n + last.size());
    for (std::size_t i = 0; i < n; ++i) {
      const Json& mount = (*before)[i];
      const Json* dest = destination(mount);
      auto w = dest ? last.find(dest->get_ref<const std::string&>()) : last.end();
      if (w == last.end())
        order.emplace_back(mount_depth(mount), i);
      else if (reuse[w->second] == kNew && is_oci_mount(mount, *mounts[w->second]))
        reuse[w->second] = i;
    }
    for (std::size_t k = 0; k < mounts.size(); ++k)
      if (last[mounts[k]->container_path] == k)
        order.emplace_back(path_depth(mounts[k]->container_path), reuse[k] == kNew ? n + k : reuse[k]);
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

    bool unchanged = order.size() == n;
    for (std::size_t i = 0; unchanged && i < n; ++i) unchanged = order[i].second == i;
    if (unchanged) return;

    Json& list = spec_.array_at({"mounts"});
    Json result = Json::array();
    result.get_ref<Json::array_t&>().reserve(order.size());
    for (const auto& [depth, slot] : order)
      result.push_back(slot < n ? std::move(list[slot]) : oci_mount(*mounts[slot - n]));
    list = std::move(result);
  }

  void hooks(const std::vector<const cdi::Hook*>& hooks) {
    for (const auto* h : hooks) put_unique(spec_.array_at({"hooks", h->hook_name}), oci_hook(*h));
  }

  void intel_rdt(const cdi::IntelRdt* rdt) {
    if (rdt) spec_.object_at({"linux"})["intelRdt"] = oci_intel_rdt(*rdt);
  }

  void additional_gids(const std::vector<std::uint32_t>& gids) {
    for (auto gid : gids)
      if (gid != 0) put_unique(spec_.array_at({"process", "user", "additionalGids"}), gid);
  }

 private:
  Spec& spec_;
};

// ---- the modifier ----

class Cdi : public Modifier {
 public:
  Cdi(std::vector<std::string> dirs, const std::string& cache_dir) : dirs_(std::move(dirs)) {
    if (!cache_dir.empty()) cache_.emplace(cache_dir);
  }

  std::string_view name() const override { return "cdi"; }
  Feeds feeds() const override { return {.consumes = {Feed::device_requests, Feed::cdi_origins}}; }
  bool idempotent() const override { return true; }

  void apply(Spec& spec, Context& ctx) override {
    std::vector<std::string> requested = cdi::requested_devices(spec);
    if (requested.empty() && ctx.device_requests.empty()) return;
    if (cache_) cache_->read_only(ctx.dry_run);
    std::vector<std::string> wanted = requested;
    for (auto& name : cdi::wanted_by(ctx.device_requests)) wanted.push_back(std::move(name));
    const cdi::Registry& reg = registry(std::move(wanted));

    // The requests handed over in memory follow the annotations'.
    cdi::Plan plan = cdi::plan(ctx.device_requests, reg);
    for (const auto& name : plan.names)
      if (std::find(requested.begin(), requested.end(), name) == requested.end()) requested.push_back(name);
    std::map<std::string, std::string> origins = ctx.cdi_origins;
    origins.insert(plan.origins.begin(), plan.origins.end());

    // Each part is one block of edits with what to call it in an error: a
    // spec's own edits once, before its first requested device, then the
    // device's. A spec asked for without a device (`none`) comes first.
    std::vector<std::pair<std::string, const ContainerEdits*>> parts;
    std::vector<std::string> missing;
    std::set<const cdi::SpecFile*> seen;
    for (const auto& file : plan.specs)
      if (seen.insert(file.get()).second && !file->edits.empty())
        parts.emplace_back("edits of CDI spec `" + file->path + "`", &file->edits);
    for (const auto& name : requested) {
      const cdi::DeviceRef* ref = reg.find(name);
      if (!ref) {
        missing.push_back(name);
        continue;
      }
      if (seen.insert(ref->spec.get()).second && !ref->spec->edits.empty())
        parts.emplace_back("edits of CDI spec `" + ref->spec->path + "`", &ref->spec->edits);
      parts.emplace_back("CDI device " + name, &ref->device->edits);
    }
    if (!missing.empty()) throw cdi::unresolvable_error(missing, reg, origins);

    // Everything that can fail on the host is done before the spec is touched.
    Merged edits;
    for (const auto& [what, part] : parts) {
      std::size_t first = edits.device_nodes.size();
      edits.add(*part);
      for (auto d = edits.device_nodes.begin() + static_cast<std::ptrdiff_t>(first); d != edits.device_nodes.end();
           ++d) {
        try {
          *d = cdi::complete_node(std::move(*d), spec);
        } catch (...) {
          std::throw_with_nested(Error("inject " + what));
        }
      }
    }
    // In a user namespace a node whose host file is elsewhere is a bind
    // mount of that file (userns.h), placed among the mounts like any other.
    for (const auto& d : edits.device_nodes)
      if (userns::binds_device(spec, d.path, d.host_path))
        edits.mounts.push_back(&edits.own_mounts.emplace_back(
            cdi::Mount{d.host_path, d.path, {std::string(userns::kDeviceBindOption)}, "bind"}));
    Injector inject(spec);
    inject.env(edits.env);
    inject.device_nodes(edits.device_nodes);
    inject.net_devices(edits.net_devices);
    inject.mounts(edits.mounts);
    inject.hooks(edits.hooks);
    inject.intel_rdt(edits.intel_rdt);
    inject.additional_gids(edits.additional_gids);
  }

 private:
  // registry scans the spec dirs once per create: later passes of the chain
  // reuse the scan unless they ask for a device it did not look for.
  const cdi::Registry& registry(std::vector<std::string> requested) {
    std::sort(requested.begin(), requested.end());
    if (!registry_ || !std::includes(wanted_.begin(), wanted_.end(), requested.begin(), requested.end())) {
      wanted_.insert(requested.begin(), requested.end());
      registry_ = cdi::load_specs(dirs_, &wanted_, cache_ ? &*cache_ : nullptr);
      log::debug("cdi: scanned {} for {}: {} file(s), {} device(s)", join(dirs_, ", "),
                 join(std::vector<std::string>(wanted_.begin(), wanted_.end()), ", "), registry_->files.size(),
                 registry_->devices.size());
    }
    return *registry_;
  }

  std::vector<std::string> dirs_;
  std::set<std::string> wanted_;
  std::optional<cdi::Registry> registry_;
  std::optional<cdi::ParseCache> cache_;
};

}  // namespace

std::unique_ptr<Modifier> make_cdi(config::Section& s) {
  auto dirs = cdi::read_spec_dirs(s);
  return dirs ? std::make_unique<Cdi>(std::move(*dirs), cdi::read_cache_dir(s)) : nullptr;
}

}  // namespace specshim
