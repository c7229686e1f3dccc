// SPDX-License-Identifier: Apache-2.0
// Hot-plug (specshim attach/detach/attached): the --device argument and the
// record of what is attached, <bundle>/specshim-attached.json (its schema is
// documented in docs/attach.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/config.h"
#include "specshim/fs.h"
#include "specshim/hotplug.h"
#include "specshim/live/container.h"
#include "specshim/live/device_rules.h"
#include "specshim/pod_allocation.h"
#include "specshim/spec.h"

namespace specshim::shim::attach {

// DeviceArg is `--device HOST[:CONTAINER[:PERMS]]` (specshim/hotplug.h).
using hotplug::canonical_permissions;
using hotplug::DeviceArg;
using hotplug::parse_device_arg;

inline constexpr const char* kRecordFile = "specshim-attached.json";
inline constexpr const char* kLockFile = "specshim-attached.lock";
inline constexpr int kRecordVersion = 1;

// RecordedDevice is one node attached at path.
struct RecordedDevice {
  std::string path;       // in the container
  std::string host_path;  // on the host (symlinks resolved)
  char type = 'c';        // 'c' or 'b'
  std::int64_t major = 0;
  std::int64_t minor = 0;
  std::string permissions = "rwm";  // the cgroup rule's access
  std::uint32_t file_mode = 0666;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  // how it got there: mknod, bind, existing (was already there), create
  // (the hotplug modifier put it in the spec; reconcile may take it back)
  std::string node = "mknod";
  bool direct = false;                 // asked for with --device (or --gpu)
  std::vector<std::string> cdi;        // the CDI devices that asked for it
  std::vector<std::string> reconcile;  // the desired-state wants ("gpu GPU-1") reconcile attached it for
  bool held() const { return direct || !cdi.empty() || !reconcile.empty(); }
  bool operator==(const RecordedDevice&) const = default;
};

// RecordedMount is one CDI mount bind-mounted at path.
struct RecordedMount {
  std::string path;
  std::string host_path;
  std::vector<std::string> options;
  std::string target = "made";  // made: the mount point was created; existing: mounted over what was there
  bool mounted = true;          // false: the same mount already was there
  std::vector<std::string> cdi;
  std::vector<std::string> reconcile;
  bool held() const { return !cdi.empty() || !reconcile.empty(); }
  bool operator==(const RecordedMount&) const = default;
};

// NotApplied is a CDI edit a running container cannot take.
struct NotApplied {
  std::string cdi;
  std::string edit;  // env, hook, additionalGids, netDevice, intelRdt
  std::string value;
  bool operator==(const NotApplied&) const = default;
};

struct Record {
  std::string container;
  std::vector<RecordedDevice> devices;
  std::vector<RecordedMount> mounts;
  std::vector<NotApplied> not_applied;
  std::vector<std::string> dirs;  // directories attach made in the container ("/dev/dri"), removed when empty
  // What the hotplug modifier gave at create (<bundle>/specshim-hotplug.json):
  // the allow rules it appended to the spec for its nodes (devices with node
  // "create" while they are held), and the CDI names it had injected.
  std::vector<DeviceRule> create_rules;
  std::vector<std::string> create_cdi;
  // The desired-state wants (hotplug::Entry::keys) reconcile holds: given
  // at create or attached since. A want that needed no node or mount (a CDI
  // device of env edits only) is held here alone.
  std::vector<std::string> reconciled;
  bool operator==(const Record&) const = default;
};

// record_json is the record's text (version kRecordVersion), ending in a newline.
std::string record_json(const Record& r);
// parse_record reads a record; throws Error naming file and the field.
Record parse_record(std::string_view text, const std::string& file);

// read_record reads <bundle>/specshim-attached.json: nullopt when there is
// none. It takes no lock: the record is replaced atomically, so a reader
// sees the old record or the new one. Throws Error when the file cannot be
// read, is malformed, or is the record of another container than id.
std::optional<Record> read_record(const std::filesystem::path& bundle, const std::string& id);

// current_record is read_record, or when there is no record yet, what the
// hotplug modifier gave at create (its grant file), or an empty record.
Record current_record(const std::filesystem::path& bundle, const std::string& id);

// enforced_rules are the device rules a container's cgroups hold while
// devices are attached: the rules runc applied from the spec
// (live::container_rules) without create_rules (the hotplug modifier's, one
// occurrence each), then one allow rule per attached device.
std::vector<live::DeviceRule> enforced_rules(const Spec& spec, const std::vector<DeviceRule>& create_rules,
                                             const std::vector<RecordedDevice>& devices);

// ---- the steps attach, detach and reconcile take (attach.cpp) ----

// Target is a container opened for a change.
struct Target {
  std::string id;
  live::ContainerState state;
  live::Process process;  // pinned when the container must be live
  config::Document doc;   // the specshim config ([cdi] spec-dirs)
  Spec spec;
};
// open_target asks the runtime (root: its --root) for the container's state,
// pins its process when require_live, and reads its spec. Throws Error.
Target open_target(const config::Document& doc, const std::string& root, const std::string& id, bool require_live);

// BundleLock holds flock(LOCK_EX) on <bundle>/specshim-attached.lock for the
// whole read-modify-write of the record and the cgroup program built from
// it, so concurrent attaches, detaches and reconciles serialize. It waits at
// most 30 s.
class BundleLock {
 public:
  explicit BundleLock(const std::filesystem::path& bundle);

 private:
  fs::Fd fd_;
};

// Wanted is what arguments (or a desired-state entry) ask for, before it is
// compared with the record. Each device and mount carries its references:
// direct and cdi for attach's arguments, reconcile for reconcile's wants.
struct Wanted {
  std::vector<RecordedDevice> devices;
  std::vector<RecordedMount> mounts;
  std::vector<NotApplied> not_applied;
};
// device_wanted is a --device argument's node (direct).
RecordedDevice device_wanted(const DeviceArg& a);
// cdi_wanted adds the named CDI devices from the configured spec dirs. An
// unknown name fails naming every spec file that did not load, as create does.
void cdi_wanted(const Target& t, const std::vector<std::string>& names, Wanted& w);
// gpu_nodes maps GPU UUIDs to their nodes through <proc>/driver/nvidia/gpus.
std::vector<std::string> gpu_nodes(const std::vector<std::string>& uuids, const std::string& proc);

// Bound is [hotplug] bound as attach and reconcile apply it (the hotplug
// modifier applies the same check at create): what the node's kubelet, CDI
// spec dirs and driver say, read once for its life (one attach, one
// reconcile pass). Off (bound = "none"): no Bound is made.
using Bound = pod_allocation::Node;
// bound_of returns the Bound when the config's [hotplug] bound is
// "pod-allocation" (proc: where the driver's GPU list is), else nullptr.
std::unique_ptr<Bound> bound_of(const config::Document& doc, const std::string& proc);
// check_bound throws pod_allocation::Refused when w would give t an
// accelerator the kubelet did not allocate to a container of t's pod,
// naming each such device (and its GPU), the pod and what the pod holds.
// A null bound checks nothing.
void check_bound(Bound* bound, const Target& t, const Wanted& w);

// Plan is the record after an attach and what in it is new.
struct Plan {
  Record record;
  std::vector<std::size_t> new_devices;  // indexes into record.devices
  std::vector<std::size_t> new_mounts;
};
// plan merges what is wanted into the record: a node at a path already
// attached with the same device and permissions only gains the references;
// another device there is an error naming who attached it.
Plan plan(Record rec, const Wanted& w);

// Change is what a transition did: the record written, the nodes and mounts
// made (with how) and removed.
struct Change {
  Record record;
  std::vector<RecordedDevice> made, removed;
  std::vector<RecordedMount> mounted, unmounted;
};
// transition moves a live container from what before records to what after
// records, under the BundleLock the caller holds: (1) the cgroup rules, (2)
// the mounts and nodes gone from after removed, (3) the new ones made, (4)
// the directories made for removed ones removed when empty, (5) the record
// written. Each step pushes its undo; when a later step fails, the undos run
// in reverse and the Error ends in "; nothing was changed" or lists the undo
// that failed. Nothing to change writes nothing.
Change transition(const Target& t, const Record& before, Record after);

// numbers is "c 195:3"; attached_by names who holds a device ("--device
// /dev/nvidia3, reconcile (gpu GPU-1)").
std::string numbers(const RecordedDevice& d);
std::string attached_by(const RecordedDevice& d);

}  // namespace specshim::shim::attach
