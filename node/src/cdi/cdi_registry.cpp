// SPDX-License-Identifier: Apache-2.0
// The CDI registry's readers besides the spec files: the names a spec
// requests, a device node completed from the host, whether a device's nodes
// are here, the error that explains an unresolvable name, and the [cdi]
// table's dirs.
#include <algorithm>
#include <unordered_set>
#include <utility>

#include "specshim/base/config.h"
#include "specshim/base/error.h"
#include "specshim/base/host_device.h"
#include "specshim/base/spec.h"
#include "specshim/base/text.h"
#include "specshim/node/cdi.h"
#include "specshim/node/cdi_cache.h"
#include "specshim/node/nvidia_cdi.h"

namespace specshim {
namespace {

using cdi::DeviceNode;
using cdi::quote;

// Names is a list without repeats, in the order first given. A tenant's
// annotation may hold thousands of names: past a few, repeats are found
// through a hash set, not by scanning the list (20,000 names took 0.4 s).
class Names {
 public:
  void add(std::string name) {
    if (list_.size() < kScan) {
      if (std::find(list_.begin(), list_.end(), name) != list_.end()) return;
    } else {
      if (seen_.empty()) seen_.insert(list_.begin(), list_.end());
      if (!seen_.insert(name).second) return;
    }
    list_.push_back(std::move(name));
  }
  std::vector<std::string> take() { return std::move(list_); }

 private:
  static constexpr std::size_t kScan = 16;
  std::vector<std::string> list_;
  std::unordered_set<std::string> seen_;
};

void add_names(const std::string& key, const std::string& value, bool empty_ok, Names& out) {
  if (value.empty() && empty_ok) return;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = value.find(',', start);
    std::string name = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string why;
    if (!cdi::parse_qualified_name(name, &why))
      throw Error("annotation " + quote(key) + ": invalid CDI device name " + quote(name) + ": " + why);
    out.add(std::move(name));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
}

}  // namespace

std::vector<std::string> cdi::requested_devices(const Spec& spec) {
  const Json* annotations = spec.find({"annotations"});
  if (!annotations || !annotations->is_object()) return {};
  // Each annotation is taken with its value as the walk finds it: looking
  // each one up again by key would scan the object once per annotation.
  std::vector<std::pair<const std::string*, const Json*>> found;
  const Json* devices = nullptr;
  for (auto it = annotations->begin(); it != annotations->end(); ++it) {
    if (it.key().rfind(cdi::kAnnotationPrefix, 0) == 0) found.emplace_back(&it.key(), &it.value());
    if (it.key() == cdi::kDevicesAnnotation) devices = &it.value();
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return *a.first < *b.first; });
  Names names;
  auto value_of = [&](const std::string& key, const Json& v) {
    if (!v.is_string()) throw Error("annotation " + quote(key) + ": must be a string");
    return v.get<std::string>();
  };
  for (const auto& [key, value] : found) add_names(*key, value_of(*key, *value), false, names);
  if (devices) add_names(cdi::kDevicesAnnotation, value_of(cdi::kDevicesAnnotation, *devices), true, names);
  return names.take();
}

namespace {

std::optional<std::uint32_t> process_id(const Spec& spec, std::string_view field) {
  const Json* v = spec.find({"process", "user", field});
  if (!v || !v->is_number_unsigned()) return std::nullopt;
  auto id = v->get<std::uint64_t>();
  if (id == 0 || id > UINT32_MAX) return std::nullopt;
  return static_cast<std::uint32_t>(id);
}

}  // namespace

cdi::DeviceNode cdi::complete_node(DeviceNode d, const Spec& spec) {
  std::string host = d.host_path.empty() ? d.path : d.host_path;
  if (host.empty() || host[0] != '/') throw Error("host path " + quote(host) + " is not absolute");
  HostDevice h = lstat_device(host);
  if (!d.file_mode) d.file_mode = h.mode;
  bool fully_given = !d.type.empty() && (d.major != 0 || d.type == "p");
  if (!fully_given) {
    std::string host_type(1, h.type);
    if (d.type.empty()) d.type = host_type;
    if (d.type != host_type)
      throw Error("device node " + quote(d.path) + ": host node `" + host + "` has type " + host_type +
                  ", the spec says " + d.type);
    if (d.type != "p" && d.major == 0) {
      d.major = h.major;
      d.minor = h.minor;
    }
  }
  if (!d.uid) d.uid = process_id(spec, "uid");
  if (!d.gid) d.gid = process_id(spec, "gid");
  return d;
}

// unresolvable_error names the devices and everything that may explain why:
// the spec files that failed to load, conflicting definitions and unreadable
// spec dirs (upstream reports only the names). A name another modifier
// handed over says where it came from (a DRA claim and its driver).
Error cdi::unresolvable_error(const std::vector<std::string>& missing, const Registry& reg,
                              const std::map<std::string, std::string>& origins) {
  std::vector<std::string> named;
  for (const auto& name : missing) {
    auto origin = origins.find(name);
    named.push_back(origin == origins.end() ? name : name + " (from " + origin->second + ")");
  }
  std::string msg = "unresolvable CDI devices " + join_some(named, ", ");
  std::vector<std::string> failed;
  for (const auto& f : reg.files)
    if (f.status == cdi::SpecFileResult::Status::failed) failed.push_back(f.path + ": " + f.error);
  if (!failed.empty()) msg += "; spec files not loaded: " + join_some(failed, "; ");
  std::vector<std::string> conflicts;
  for (const auto& name : missing)
    if (auto c = reg.conflicts.find(name); c != reg.conflicts.end())
      conflicts.push_back(name +
                          " is defined by more than one spec file of the same dir: " + join_some(c->second, ", "));
  if (!conflicts.empty()) msg += "; " + join_some(conflicts, "; ");
  if (!reg.dir_errors.empty()) msg += "; " + join_some(reg.dir_errors, "; ");
  msg += "; searched " + (reg.dirs.empty() ? std::string("no spec dirs") : join(reg.dirs, ", "));
  // NVIDIA's spec is generated on the node: one that lacks a GPU is stale or
  // was never written since boot (/var/run/cdi is a tmpfs).
  const std::string gpu_prefix = std::string(nvidia::kGpuKind) + "=";
  if (std::any_of(missing.begin(), missing.end(), [&](const std::string& n) { return n.rfind(gpu_prefix, 0) == 0; }))
    msg +=
        "; NVIDIA's spec lacks it: regenerate it (`systemctl restart nvidia-cdi-refresh.service` or "
        "specshim-nvidia-cdi.service, or `" +
        std::string(nvidia::kRefresh) + "`); `specshim doctor` compares it with the driver";
  return Error(msg);
}

std::optional<std::vector<std::string>> cdi::read_spec_dirs(config::Section& s) {
  if (s.boolean("enabled") == false) return std::nullopt;
  std::vector<std::string> dirs = {"/etc/cdi", "/var/run/cdi"};
  if (auto d = s.strings("spec-dirs")) dirs = *d;
  for (const auto& dir : dirs)
    if (dir.empty() || dir[0] != '/' || contains_control(dir))
      s.fail("spec-dirs", "`" + dir + "` is not an absolute path");
  return dirs;
}

std::string cdi::read_cache_dir(config::Section& s) {
  std::string dir = s.string("cache-dir").value_or(kDefaultCacheDir);
  if (!dir.empty() && (dir[0] != '/' || contains_control(dir)))
    s.fail("cache-dir", "`" + dir + "` is not an absolute path (\"\" turns the parse cache off)");
  return dir;
}

bool cdi::present(const DeviceRef& ref) {
  for (const auto& n : ref.device->edits.device_nodes) {
    try {
      HostDevice h = lstat_device(n.host_path.empty() ? n.path : n.host_path);
      if (!n.type.empty() && (n.type == "b") != (h.type == 'b')) return false;
      if (n.major != 0 && (n.major != h.major || n.minor != h.minor)) return false;
    } catch (const Error&) {
      return false;
    }
  }
  return true;
}

}  // namespace specshim
