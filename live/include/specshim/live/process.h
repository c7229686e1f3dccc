// SPDX-License-Identifier: Apache-2.0
// A running container's init process, held so that its pid cannot be
// mistaken for another process's once the kernel reuses it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>

#include "specshim/live/runtime_state.h"

namespace specshim::live {

// Process is a container's init process held by a pidfd, so that the pid,
// once the kernel hands it to another process, cannot be mistaken for the
// container's: every entry into its namespaces opens /proc/PID/ns/* first
// and then checks that the pidfd's process is still alive (then those are
// its namespaces). Copies share the pidfd.
class Process {
 public:
  Process() = default;
  pid_t pid() const { return pid_; }
  // alive reports whether the process has not exited (the pidfd polls readable when it has).
  bool alive() const;
  // require_alive throws Error naming the pid when it has exited.
  void require_alive() const;

 private:
  friend Process pin(const std::filesystem::path&, const std::string&, const ContainerState&);
  pid_t pid_ = 0;
  std::shared_ptr<const int> fd_;  // the pidfd, closed with the last copy
};

// pin opens a pidfd for state.pid, then asks the runtime's state again: the
// pidfd holds the container's process when the runtime still names that pid
// and the container is created or running (runc checks the pid's start time
// against its own record, so a reused pid reads as stopped). Throws Error
// naming the container otherwise.
Process pin(const std::filesystem::path& runtime, const std::string& root, const ContainerState& state);

// has_own_user_namespace reports whether pid is in another user namespace
// than this process (/proc/PID/ns/user against /proc/self/ns/user).
bool has_own_user_namespace(pid_t pid);

}  // namespace specshim::live
