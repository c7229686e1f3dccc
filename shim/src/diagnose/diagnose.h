// SPDX-License-Identifier: Apache-2.0
// specshim diagnose: why a container cannot use its device, layer by layer.
// One file per layer; the container is read once (container.cpp) and every
// layer judges what was read. Read-only: nothing here writes, locks for
// long, enters a namespace or opens a device node. docs/diagnose.md.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "severity.h"
#include "specshim/base/error.h"
#include "specshim/base/spec.h"
#include "specshim/base/vendors.h"
#include "specshim/live/attach_record.h"
#include "specshim/live/cgroup_devices.h"
#include "specshim/live/container.h"
#include "specshim/live/inspect.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/node/pod_allocation.h"
#include "specshim/node/userns.h"

namespace specshim::shim::diagnose {

// The layers, in the order they are checked and printed.
inline constexpr std::string_view kAllocation = "allocation";
inline constexpr std::string_view kSpec = "spec";
inline constexpr std::string_view kNode = "node";
inline constexpr std::string_view kCgroup = "cgroup";
inline constexpr std::string_view kCompanions = "companions";
inline constexpr std::string_view kIdentity = "identity";
inline constexpr std::string_view kHotplug = "hot-plug";

// Finding is one line of the report: what was checked (subject: a device
// path, a library, "uid 1000"), what was found, naming its evidence, and
// for a warn or fail what to do about it.
struct Finding {
  std::string layer;
  std::string subject;
  Severity status = Severity::info;
  std::string message;
  std::string hint;
};

class Report {
 public:
  void add(std::string_view layer, std::string subject, Severity s, std::string message, std::string hint = "") {
    findings_.push_back({std::string(layer), std::move(subject), s, std::move(message), std::move(hint)});
  }
  const std::vector<Finding>& findings() const { return findings_; }
  // status is the worst finding's; info alone counts as ok.
  Severity status() const;
  bool failed() const { return status() == Severity::fail; }

 private:
  std::vector<Finding> findings_;
};

// Device is one device the container should be able to use, and why.
struct Device {
  std::string path;  // in the container
  char type = 'c';   // 'c' or 'b'
  std::int64_t major = 0;
  std::int64_t minor = 0;
  bool numbers_known = false;  // false: only the path is known (--device, an allocation whose host node is gone)
  std::string host_path;       // the host node it was made from; "" when the spec gives only numbers
  std::string access = "rw";   // what node and cgroup must allow (open(O_RDWR), or what was granted)
  std::string source;          // "linux.devices", "CDI `vendor.com/gpu=0`", "kubelet `vendor.com/gpu` (ID-1)"
  bool bind = false;           // a bind mount of host_path (a user-namespaced container)
  std::string remedy = {};     // what brings a missing or wrong node back ("" : recreate the container, or attach)
};
std::string numbers(const Device& d);  // "c 195:0", or "?" when not known
// add_device puts d into list, or completes the device already listed at
// its path (host path, numbers, sources).
void add_device(std::vector<Device>& list, Device d);

// Container is everything diagnose reads about a container, read once.
struct Container {
  std::string id;
  live::ContainerState state;
  Spec spec;
  std::optional<live::attach::Record> record;
  std::optional<userns::UserNamespace> userns;  // the spec's user namespace
  std::filesystem::path root;                   // /proc/PID/root: the container's files as it sees them
  live::ProcessView process;
  live::CgroupPlaces cgroups;
  std::vector<live::MountEntry> mounts;  // /proc/PID/mountinfo: the container's mount table
  std::filesystem::path sysfs = "/sys";
  pod_identity::Identity identity;
  std::string identity_error;  // why identify() refused the spec's annotations ("" when it did not)

  // owner_mapped: whether host ids uid:gid exist inside (always outside a user namespace).
  bool owner_mapped(std::uint32_t uid, std::uint32_t gid) const;
  // owner describes a host owner as the container sees it: "0:0", or
  // "1000:1000 (host 101000:101000)" in a user namespace.
  std::string owner(std::uint32_t uid, std::uint32_t gid) const;
  // process_ids describes the process's ids as the container sees them:
  // "uid 1000 gid 1000 groups 44", host ids in parentheses in a user namespace.
  std::string process_ids() const;
  // mount_at is the mount whose point is path (the last one listed), or nullptr.
  const live::MountEntry* mount_at(const std::string& path) const;
};

// Options is the command line.
struct Options {
  std::string root;  // the runtime's --root
  std::string config_file;
  std::string format = "text";
  std::string sysfs = "/sys";
  std::string id;
  std::string pod;        // NAMESPACE/NAME
  std::string container;  // with --pod
  std::vector<std::string> devices;
  std::vector<std::string> cdi;
  bool all = false;  // --all: every live container of the root (shim/src/diagnose/all.cpp)
};

// Setup is what the config says where to look.
struct Setup {
  std::string runtime;                               // the runtime binary
  std::string runtime_root;                          // its --root ("": its default)
  std::optional<std::vector<std::string>> cdi_dirs;  // nullopt: [cdi] enabled = false
  std::filesystem::path kubelet_root;
  std::chrono::milliseconds kubelet_budget{2000};  // [kubelet] budget-ms: the PodResources call's deadline
  // Which host devices are accelerators and where the grants are (the
  // allocation layer's check for nodes beyond the grant); the driver's GPU
  // list is under [hotplug] proc.
  pod_allocation::Sources accelerators;
  // [device-plugin]'s resources: their require-env, which every answer the
  // kubelet cached for them must set (the allocation layer).
  device_plugin::Config device_plugin;
};

// CannotInspect is why the container cannot be looked at: exit 2.
class CannotInspect : public Error {
 public:
  using Error::Error;
};

// find_container resolves CONTAINER-ID or --pod/--container to a container
// id, through the runtime's `list` and each bundle's annotations (sandboxes
// skipped). Throws CannotInspect when none or several match.
std::string find_container(const Setup& setup, const Options& o);
// split_pod splits --pod's NAMESPACE/NAME; throws CannotInspect for anything else.
std::pair<std::string, std::string> split_pod(const std::string& pod);
// pod_matches reports whether a spec's CRI annotations name this pod (and
// container, when not empty), and that it is not a sandbox.
bool pod_matches(const Spec& spec, std::string_view ns, std::string_view name, std::string_view container);

// open_container reads the container: runtime state (created or running),
// spec, record, process, cgroups, mounts. Throws CannotInspect.
Container open_container(const Setup& setup, const std::string& id, const std::filesystem::path& sysfs);

// The layers. Each adds its findings; the first two also return the devices
// they found the container should have.
std::vector<Device> check_allocation(const Setup& setup, const Container& c, Report& r);
std::vector<Device> check_spec(const Setup& setup, const Container& c, Report& r);
// check_node: the node at d.path inside the container is d, and opens for the process.
void check_node(const Container& c, const Device& d, Report& r, std::string_view layer = kNode);
// check_cgroup: the container's cgroups allow d.access on d.
void check_cgroup(const Container& c, const Device& d, Report& r, std::string_view layer = kCgroup);
// systemd_allows decides one access by a unit's DeviceAllow= list (the
// output of `systemctl show --property=DeviceAllow --value`): entries
// "/dev/char/MAJ:MIN", "char-NAME" (a driver name from proc_devices, the text
// of /proc/devices, or a number, or *), "block-..." and node paths, each with
// its access letters.
bool systemd_allows(std::string_view device_allow, std::string_view proc_devices, char type, std::int64_t major,
                    std::int64_t minor, char access);

// The companions table is specshim/base/vendors.h.

void check_companions(const Container& c, const std::vector<Device>& devices, Report& r);
void check_identity(const Container& c, Report& r);
void check_hotplug(const Container& c, Report& r);

// in_spec names how the spec gives the container path: "linux.devices",
// "a bind mount", or "" when it does not.
std::string in_spec(const Spec& spec, const std::string& path);
// open_access is the part of cgroup permissions ("rwm", "r") an open needs: "rw", "r".
std::string open_access(std::string_view permissions);
// cdi_devices resolves CDI names through the configured spec dirs into the
// devices their nodes make (spec-level edits included), completed from the
// host as create completes them. Names that do not resolve are returned in
// missing; throws Error when CDI is off.
std::vector<Device> cdi_devices(const Setup& setup, const Spec& spec, const std::vector<std::string>& names,
                                std::vector<std::string>& missing);

// host_device describes the node at a host path (following symlinks) as a
// Device; nullopt when there is none or it is not a char/block device.
std::optional<Device> host_device(const std::string& host_path, std::string container_path, std::string source);

// run_layers runs the layers in order on one container (--device and --cdi
// narrow the devices).
Report run_layers(const Setup& setup, const Container& c, const Options& o);

// status_label is how the text report shows a status: WARN and FAIL in
// capitals, the others by name.
std::string status_label(Severity s);

// render_text: one aligned line per finding, the hints of warn and fail
// lines below them; to_json: the documented JSON object.
std::string render_text(const Container& c, const Report& r);
nlohmann::ordered_json to_json(const Container& c, const Report& r);

// diagnose_all checks every live container of the root but sandboxes and
// prints one summary line each with its failing findings (text) or an array
// of to_json objects. Returns the exit status: 1 when a check failed or a
// container could not be inspected, else 0. Throws CannotInspect when the
// runtime cannot list the root.
int diagnose_all(const Setup& setup, const Options& o);

}  // namespace specshim::shim::diagnose
