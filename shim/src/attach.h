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

#include "specshim/live/device_rules.h"
#include "specshim/spec.h"

namespace specshim::shim::attach {

// DeviceArg is `--device HOST[:CONTAINER[:PERMS]]`: CONTAINER defaults to
// HOST, PERMS (a non-empty subset of rwm) to rwm, written in rwm order.
struct DeviceArg {
  std::string host;
  std::string container;
  std::string permissions = "rwm";
  bool operator==(const DeviceArg&) const = default;
};
// parse_device_arg throws Error naming the argument and what is wrong.
DeviceArg parse_device_arg(std::string_view arg);

// canonical_permissions returns p as a subset of "rwm" in that order, or
// nullopt when p is empty or has another letter or a letter twice.
std::optional<std::string> canonical_permissions(std::string_view p);

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
  std::string node = "mknod";    // how it got there: mknod, bind, existing (was already there)
  bool direct = false;           // asked for with --device
  std::vector<std::string> cdi;  // the CDI devices that asked for it
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

// enforced_rules are the device rules a container's cgroups hold while
// devices are attached: the rules runc applied from the spec
// (live::container_rules), then one allow rule per attached device.
std::vector<live::DeviceRule> enforced_rules(const Spec& spec, const std::vector<RecordedDevice>& devices);

}  // namespace specshim::shim::attach
