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
#include <string_view>
#include <vector>

#include "specshim/live/device_rules.h"

namespace specshim::live {

// MountEntry is one line of mountinfo(5), paths unescaped.
struct MountEntry {
  std::string root;   // the directory of the filesystem mounted there
  std::string point;  // where
  std::string fstype;
  std::string super_options;                       // "rw,devices"
  std::string options;                             // the mount's own: "rw,nosuid,nodev"
  bool has_option(std::string_view option) const;  // in super_options
};
std::vector<MountEntry> parse_mountinfo(std::string_view mountinfo);

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
// parse_cgroup_places is cgroup_places on the text of /proc/PID/cgroup and
// of the mountinfo of the mount namespace the paths are for. A cgroup whose
// hierarchy is not mounted (or mounted showing another part of it) is left
// out; the systemd unit is looked for in the cgroup2 path, then the devices
// one, then name=systemd's.
CgroupPlaces parse_cgroup_places(std::string_view proc_cgroup, std::string_view mountinfo);

// Undo reverses one applied change; calling it is best effort and it
// throws Error when the reversal itself fails.
using Undo = std::function<void()>;

// v1_write writes rule (allow: devices.allow, deny: devices.deny) into a v1
// devices cgroup directory. Throws Error naming the file and the rule.
void v1_write(const std::filesystem::path& devices_dir, const DeviceRule& rule);

// attached_device_programs lists the ids of the BPF_CGROUP_DEVICE programs
// attached to a cgroup2 directory (BPF_PROG_QUERY).
std::vector<std::uint32_t> attached_device_programs(const std::filesystem::path& cgroup_dir);

// effective_device_programs lists the ids of the device programs in effect
// on a cgroup2 directory (BPF_F_QUERY_EFFECTIVE): its own and those of its
// ancestors attached with BPF_F_ALLOW_MULTI. Each one must allow an access.
std::vector<std::uint32_t> effective_device_programs(const std::filesystem::path& cgroup_dir);

// device_program_instructions reads a loaded program's instructions as the
// kernel runs them (translated), for run_device_program. Throws Error when the
// program is gone or the kernel does not show them.
std::vector<bpf_insn> device_program_instructions(std::uint32_t id);

// kSystemdDeviceProgram is the name systemd gives the device program it
// builds for a unit from DeviceAllow= (seen with Debian 12's systemd 252). It
// rebuilds that program on every set-property and daemon-reload, and attaches
// it beside the runtime's (BPF_F_ALLOW_MULTI: each must allow an access).
inline constexpr std::string_view kSystemdDeviceProgram = "sd_devices";

// device_program_name is a loaded program's name ("" when it has none).
// Throws Error when the program is gone.
std::string device_program_name(std::uint32_t id);

// replace_device_program loads compile_program(rules) and attaches it to the
// cgroup2 directory: with BPF_F_ALLOW_MULTI|BPF_F_REPLACE over the one device
// program attached there, or plainly when none is. With leave_systemd, the
// programs named kSystemdDeviceProgram are systemd's to rebuild (the caller
// tells systemd through DeviceAllow=): they are left attached and not
// counted, and when they are all there is, nothing is attached. Throws Error
// when more than one other program is attached, and when afterwards the new
// one is not the only other program attached. The Undo puts the previous
// program back (or detaches the new one when there was none).
Undo replace_device_program(const std::filesystem::path& cgroup_dir, const std::vector<DeviceRule>& rules,
                            bool leave_systemd = false);

// device_program_loads loads (and closes) compile_program(runc's default
// rules), for doctor: empty when the kernel accepts it, else why not (with
// the verifier's log). Attaches nothing.
std::string device_program_loads();

// SystemdRequest is what tells systemd the unit's devices changed, so a
// daemon-reload (which makes systemd rewrite the unit's device rules from
// its own properties) does not take them away: DeviceAllow= as a runtime
// property (systemd.resource-control(5), systemd v240 or later).
struct SystemdRequest {
  std::string unit;  // "cri-containerd-abc.scope"
  // DeviceAllow= values, the whole list: "" first (an empty assignment
  // resets the unit's list, as runc's systemd driver does), then one entry
  // per allowed key: "/dev/char/1:11 rw" (systemd >= 240 parses the numbers
  // from such a path, no node needed), "char-195 rw" for 195:*, "char-* m"
  // for *:*; the same with /dev/block/ and block-.
  std::vector<std::string> values;
  // What systemd cannot say, left out of values (the caller says so):
  // "c *:3 rw" (a wildcard major with a minor), and the deny rules of an
  // allow-by-default list (systemd has only allow lists; as runc does, the
  // list is then empty, which denies everything after a daemon-reload).
  std::vector<std::string> unsupported;
  // argv of `systemctl set-property --runtime -- UNIT DeviceAllow= DeviceAllow=...`
  std::vector<std::string> systemctl_argv() const;
};
// systemd_device_allow turns the container's whole rule list (what the
// cgroup enforces after the change, reduced as the v1 controller would:
// compile_program's view) into the request. Throws Error where
// compile_program does.
SystemdRequest systemd_device_allow(const std::string& unit, const std::vector<DeviceRule>& rules);

// systemd_is_pid1 reports whether systemd runs as PID 1: root/run/systemd/system
// is a directory (what sd_booted(3) tests).
bool systemd_is_pid1(const std::filesystem::path& root = "/");

}  // namespace specshim::live
