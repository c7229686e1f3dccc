// SPDX-License-Identifier: Apache-2.0
// The hot-plug record: what attach, reconcile (and the hotplug modifier at
// create) gave a running container, <bundle>/specshim-attached.json (its
// schema is documented in docs/attach.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/spec.h"
#include "specshim/live/device_rules.h"
#include "specshim/node/hotplug.h"

namespace specshim::live::attach {

// DeviceArg is `--device HOST[:CONTAINER[:PERMS]]` (specshim/node/hotplug.h).
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
// hotplug modifier gave at create (its grant file), or an empty record. The
// grant file is in the bundle, or for a container specshim-nri's chain
// created (no bundle yet then) in <nri_state_dir>/<id> ([nri] state-dir).
Record current_record(const std::filesystem::path& bundle, const std::string& id,
                      const std::filesystem::path& nri_state_dir = {});

// enforced_rules are the device rules a container's cgroups hold while
// devices are attached: the rules runc applied from the spec
// (live::container_rules) without create_rules (the hotplug modifier's, one
// occurrence each), then one allow rule per attached device.
std::vector<DeviceRule> enforced_rules(const Spec& spec, const std::vector<DeviceRule>& create_rules,
                                       const std::vector<RecordedDevice>& devices);

// numbers is "c 195:3"; attached_by names who holds a device ("--device
// /dev/nvidia3, reconcile (gpu GPU-1)").
std::string numbers(const RecordedDevice& d);
std::string attached_by(const RecordedDevice& d);

}  // namespace specshim::live::attach
