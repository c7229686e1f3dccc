// SPDX-License-Identifier: Apache-2.0
// Changing the device rules of a running container's cgroups: cgroup v1
// devices.allow/devices.deny, the cgroup v2 device program (replaced
// atomically with BPF_F_REPLACE), and systemd's DeviceAllow= when systemd
// owns the cgroup. Every change returns what undoes it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "specshim/live/device_rules.h"

namespace specshim::live {

// CgroupPlaces are the cgroups a process is in, from /proc/PID/cgroup and
// the mount table: the v1 devices controller's directory, the cgroup2
// directory (unified host, or /sys/fs/cgroup/unified on a hybrid one), and
// the systemd unit owning it (a ".scope"/".service" path component), each
// when present.
struct CgroupPlaces {
  std::optional<std::filesystem::path> v1_devices;
  std::optional<std::filesystem::path> unified;
  std::string systemd_unit;
};
CgroupPlaces cgroup_places(pid_t pid);

// Undo reverses one applied change; calling it is best effort and it
// throws Error when the reversal itself fails.
using Undo = std::function<void()>;

// v1_write writes rule (allow: devices.allow, deny: devices.deny) into a v1
// devices cgroup directory. Throws Error naming the file and the rule.
void v1_write(const std::filesystem::path& devices_dir, const DeviceRule& rule);

// attached_device_programs lists the ids of the BPF_CGROUP_DEVICE programs
// attached to a cgroup2 directory (BPF_PROG_QUERY).
std::vector<std::uint32_t> attached_device_programs(const std::filesystem::path& cgroup_dir);

// replace_device_program loads compile_program(rules) and attaches it to the
// cgroup2 directory: with BPF_F_ALLOW_MULTI|BPF_F_REPLACE over the one device
// program attached there, or plainly when none is. Throws Error when more
// than one is attached, and when afterwards exactly one device program is not
// attached. The Undo puts the previous program back (or detaches the new one
// when there was none).
Undo replace_device_program(const std::filesystem::path& cgroup_dir, const std::vector<DeviceRule>& rules);

// SystemdRequest is what tells systemd the unit's devices changed, so a
// daemon-reload does not take them away: DeviceAllow= as a runtime property.
struct SystemdRequest {
  std::string unit;                 // "cri-containerd-abc.scope"
  std::vector<std::string> values;  // DeviceAllow= values: "char-1:11 rw" or "/dev/x rw"
  // argv of `systemctl set-property --runtime UNIT DeviceAllow=...`
  std::vector<std::string> systemctl_argv() const;
};
SystemdRequest systemd_device_allow(const std::string& unit, const std::vector<DeviceRule>& rules);

// systemd_is_pid1 reports whether systemd runs as PID 1 (/run/systemd/system).
bool systemd_is_pid1();

}  // namespace specshim::live
