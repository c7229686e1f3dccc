// SPDX-License-Identifier: Apache-2.0
// Devices-cgroup rules of a running container, and the BPF_CGROUP_DEVICE
// program that enforces a list of them on cgroup v2. Pure code: nothing here
// touches the system (cgroup_devices.h does).
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/device_rules.h"
#include "specshim/base/spec.h"

namespace specshim::live {

// DeviceRule (specshim/base/device_rules.h) is one devices-cgroup rule.
using specshim::DeviceRule;

// str is the rule in devices.allow syntax: "c 1:11 rw", "a *:* rwm".
std::string str(const DeviceRule& rule);

// runc_default_rules are the rules runc appends after a spec's own (its
// specconv AllowedDevices, runc 1.1 to 1.5): mknod of any char and block
// node, and rwm on null, random, full, tty, zero, urandom, the pts range
// (136:*), ptmx (5:2) and tun (10:200). runc 1.2.0-1.2.3 lacked tun; no runc
// since 1.0 has console (5:1): /dev/console is a pts bind mount there.
const std::vector<DeviceRule>& runc_default_rules();

// container_rules are the rules runc applied when it created the container
// from spec: read_device_rules, then runc_default_rules without the defaults whose
// path (/dev/null, ...) linux.devices lists (runc drops those in favour of
// the spec's entry). Throws Error as read_device_rules does.
std::vector<DeviceRule> container_rules(const Spec& spec);

// Access is one device access a program decides on.
struct Access {
  char type = 'c';  // 'c' or 'b'
  std::int64_t major = 0;
  std::int64_t minor = 0;
  char access = 'r';  // 'r', 'w' or 'm'
};

// reference_decision decides an access the way the kernel's cgroup v1
// devices controller does for a rule list written in order into a new
// cgroup, which is also what runc's cgroup v2 program enforces (runc runs
// the list through its v1 emulator first). It is NOT "the last matching rule
// wins":
// - the cgroup starts denying everything; a type 'a' rule anywhere resets it
//   (allow: allow everything, deny: deny everything) and drops every
//   exception before it, whatever its numbers and access;
// - any other rule is an exception keyed by exactly (type, major, minor) and
//   changes only that key's access: a rule of the default's opposite verdict
//   adds its access to the key, one of the default's verdict removes its
//   access from the key (never from a wildcard key covering it: the kernel
//   ignores such a deny silently, runc refuses it);
// - an access gets the opposite of the default when an exception key covers
//   the device (wildcards on the key's side) and holds the access.
// It is the specification compile_program is tested against.
bool reference_decision(const std::vector<DeviceRule>& rules, const Access& access);

// Reduced is a rule list as the v1 controller holds it after the list was
// written into a new cgroup: the default, and the exceptions (one per key,
// sorted by type, major, minor; access merged), each granting its access
// against the default (allow: true when the default denies).
struct Reduced {
  bool default_allow = false;
  std::vector<DeviceRule> exceptions;
};
// reduce applies rules as the controller does (reference_decision's rules),
// refusing what compile_program refuses.
Reduced reduce(const std::vector<DeviceRule>& rules);

// compile_program turns a rule list into a BPF_CGROUP_DEVICE program whose
// decision for every access equals reference_decision's (for a request of
// several access bits at once, as open(O_RDWR) makes, it decides as the v1
// controller does: a deny-by-default list needs one exception holding all of
// them, an allow-by-default list denies when any exception holds any). Throws
// Error, as runc does, for a list whose deny would punch a hole into a
// wildcard exception ("c 1:* rwm" allowed, then "c 1:3 w" denied): the kernel
// would ignore that deny and allow what the list seems to refuse.
std::vector<bpf_insn> compile_program(const std::vector<DeviceRule>& rules);

// ProgramRun is what a device program decided for one request, or why it
// cannot be run here.
struct ProgramRun {
  std::optional<bool> allow;  // nullopt: see error
  std::string error;          // "insn 7: calls a kernel helper"
};

// run_device_program runs a BPF_CGROUP_DEVICE program as the kernel holds it
// (its translated instructions) on one request: a device and the access
// letters the kernel asks for at once (open(O_RDWR) asks "rw"). It runs what
// device programs use without helpers (runc's, specshim's, clang's): context
// loads, stack spills, 32- and 64-bit arithmetic, every conditional jump, 64-bit immediates. A
// helper call, a map, an atomic, a read of an unset register or stack slot,
// a jump out of the program or 1,000,000 steps without an exit give an error
// instead of a decision.
ProgramRun run_device_program(const std::vector<bpf_insn>& prog, char type, std::int64_t major, std::int64_t minor,
                              std::string_view access);

}  // namespace specshim::live
