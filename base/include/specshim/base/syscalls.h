// SPDX-License-Identifier: Apache-2.0
// Syscall and seccomp architecture names, through libseccomp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace specshim::syscalls {

// native_arch returns the OCI name of the architecture specshim runs on
// ("SCMP_ARCH_X86_64").
std::string native_arch();

// common_archs lists the OCI architecture names a config is checked against
// at load time, before any profile is seen: the native one first, then the
// architectures Kubernetes nodes commonly run (and their compat modes).
const std::vector<std::string>& common_archs();

// exists_on reports whether syscall is a real syscall on the OCI architecture
// arch ("SCMP_ARCH_AARCH64"). A name libseccomp knows only as a pseudo
// syscall for that architecture (`open` on aarch64) does not exist there;
// socketcall/ipc-multiplexed calls (`socket` on x86) do. Throws Error for an
// architecture libseccomp does not know.
bool exists_on(std::string_view syscall, std::string_view arch);

}  // namespace specshim::syscalls
