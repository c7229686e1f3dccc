// SPDX-License-Identifier: Apache-2.0
// Device rules as a config.json's linux.resources.devices lists them, read
// strictly. The devices-cgroup modifier (at create) and live (attach, on a
// running container) read them through this one reader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "specshim/base/spec.h"

namespace specshim {

// DeviceRule is one devices-cgroup rule as OCI's linux.resources.devices
// writes it: type 'a' (all), 'c' or 'b'; a missing major/minor is the
// wildcard '*'; access is a non-empty subset of "rwm", in that order.
struct DeviceRule {
  bool allow = true;
  char type = 'a';
  std::optional<std::int64_t> major;
  std::optional<std::int64_t> minor;
  std::string access = "rwm";
  bool operator==(const DeviceRule&) const = default;
};

// read_device_rules reads linux.resources.devices as runc does: absent or
// null is no rules; each entry has a boolean allow, a type "a", "b" or "c"
// (absent, null or empty: "a"), major and minor absent, null (any) or
// 0..2^32-1 (the controller's numbers are u32; runc's filter refuses more),
// and access a non-empty combination of r, w and m ("wr" and "rrw" are read
// as "rw"). Throws Error naming the entry, e.g. `linux.resources.devices[3].type`.
std::vector<DeviceRule> read_device_rules(const Spec& spec);

// allows_all tells rules that open every device: the last wildcard rule
// (type `a`, no numbers) allows rwm and no deny follows it, as in the rule
// containerd and CRI-O give a privileged container ([{allow: true, access: rwm}]).
bool allows_all(const std::vector<DeviceRule>& rules);

}  // namespace specshim
