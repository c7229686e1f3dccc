// SPDX-License-Identifier: Apache-2.0
// Capability names and this process's capabilities, through libcap.
#pragma once

#include <iterator>
#include <string>
#include <string_view>

namespace specshim::caps {

// canonical returns the OCI spelling ("CAP_IPC_LOCK") of a capability name
// given in any case. The name must carry the CAP_ prefix and be known to the
// running kernel (libcap's cap_max_bits), not just to libcap. Throws Error
// naming what is wrong otherwise.
std::string canonical(std::string_view name);

// kernel_last returns the OCI name of the highest capability the running
// kernel supports, for messages ("... the kernel knows up to CAP_X").
std::string kernel_last();

// kEveryKernel lists the capabilities every kernel since 3.16 knows,
// CAP_CHOWN (0) to CAP_AUDIT_READ (37), in number order: a privileged
// container's engine gives it all of them (and any newer the kernel has).
inline constexpr std::string_view kEveryKernel[] = {"CAP_CHOWN",
                                                    "CAP_DAC_OVERRIDE",
                                                    "CAP_DAC_READ_SEARCH",
                                                    "CAP_FOWNER",
                                                    "CAP_FSETID",
                                                    "CAP_KILL",
                                                    "CAP_SETGID",
                                                    "CAP_SETUID",
                                                    "CAP_SETPCAP",
                                                    "CAP_LINUX_IMMUTABLE",
                                                    "CAP_NET_BIND_SERVICE",
                                                    "CAP_NET_BROADCAST",
                                                    "CAP_NET_ADMIN",
                                                    "CAP_NET_RAW",
                                                    "CAP_IPC_LOCK",
                                                    "CAP_IPC_OWNER",
                                                    "CAP_SYS_MODULE",
                                                    "CAP_SYS_RAWIO",
                                                    "CAP_SYS_CHROOT",
                                                    "CAP_SYS_PTRACE",
                                                    "CAP_SYS_PACCT",
                                                    "CAP_SYS_ADMIN",
                                                    "CAP_SYS_BOOT",
                                                    "CAP_SYS_NICE",
                                                    "CAP_SYS_RESOURCE",
                                                    "CAP_SYS_TIME",
                                                    "CAP_SYS_TTY_CONFIG",
                                                    "CAP_MKNOD",
                                                    "CAP_LEASE",
                                                    "CAP_AUDIT_WRITE",
                                                    "CAP_AUDIT_CONTROL",
                                                    "CAP_SETFCAP",
                                                    "CAP_MAC_OVERRIDE",
                                                    "CAP_MAC_ADMIN",
                                                    "CAP_SYSLOG",
                                                    "CAP_WAKE_ALARM",
                                                    "CAP_BLOCK_SUSPEND",
                                                    "CAP_AUDIT_READ"};
static_assert(std::size(kEveryKernel) == 38);

// Own is what this process holds of one capability.
struct Own {
  bool effective = false;
  bool permitted = false;
  bool bounding = false;
};

// own reports this process's state for a canonical capability name.
Own own(std::string_view canonical_name);

}  // namespace specshim::caps
