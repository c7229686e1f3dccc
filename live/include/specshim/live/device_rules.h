// SPDX-License-Identifier: Apache-2.0
// Devices-cgroup rules of a running container, and the BPF_CGROUP_DEVICE
// program that enforces a list of them on cgroup v2. Pure code: nothing here
// touches the system (cgroup_devices.h does).
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "specshim/spec.h"

namespace specshim::live {

// DeviceRule is one devices-cgroup rule as OCI's linux.resources.devices
// writes it: type 'a' (all), 'c' or 'b'; a missing major/minor is the
// wildcard '*'; access is a non-empty subset of "rwm".
struct DeviceRule {
  bool allow = true;
  char type = 'a';
  std::optional<std::int64_t> major;
  std::optional<std::int64_t> minor;
  std::string access = "rwm";
  bool operator==(const DeviceRule&) const = default;
};

// str is the rule in devices.allow syntax: "c 1:11 rw", "a *:* rwm".
std::string str(const DeviceRule& rule);

// runc_default_rules are the rules runc adds after a spec's own (its
// specconv AllowedDevices): mknod of any node, and rwm on null, zero, full,
// random, urandom, tty, ptmx, the pts range and tun.
const std::vector<DeviceRule>& runc_default_rules();

// spec_rules reads linux.resources.devices of a config.json. Throws Error
// naming the index of an entry that is not a valid rule.
std::vector<DeviceRule> spec_rules(const Spec& spec);

// Access is one device access a program decides on.
struct Access {
  char type = 'c';  // 'c' or 'b'
  std::int64_t major = 0;
  std::int64_t minor = 0;
  char access = 'r';  // 'r', 'w' or 'm'
};

// reference_decision decides an access the way the kernel's cgroup v1
// devices controller and runc's emulator do for a rule list applied in
// order: the last matching rule wins, nothing matching is denied. It is the
// specification compile_program is tested against.
bool reference_decision(const std::vector<DeviceRule>& rules, const Access& access);

// compile_program turns a rule list into a BPF_CGROUP_DEVICE program whose
// decision for every access equals reference_decision's.
std::vector<bpf_insn> compile_program(const std::vector<DeviceRule>& rules);

}  // namespace specshim::live
