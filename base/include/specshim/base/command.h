// SPDX-License-Identifier: Apache-2.0
// Running a helper command (the runtime's state and list, systemctl, a
// version probe) with a deadline: the one place specshim spawns and waits.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace specshim {

// CommandResult is how a command ended and what it printed.
struct CommandResult {
  int exit_code = -1;  // exit status; -1 when killed or not started
  bool timed_out = false;
  std::string out;  // stdout (at most 1 MiB); with Stderr::merged, stderr too
  std::string err;  // stderr (at most 64 KiB); empty with Stderr::merged
};

// Stderr says where a command's stderr goes: its own buffer, or into out
// through the same pipe as stdout, in the order it was written.
enum class Stderr { separate, merged };

// run_command runs argv[0] (a path, or a name looked up in PATH) with argv,
// stdin from /dev/null and no signal blocked, and kills it when it has not
// finished within timeout. Throws Error ("run `X`: No such file or
// directory") when it cannot be started.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          Stderr stderr_to = Stderr::separate);

// The two halves of waiting on a child, for a caller that forks its own
// (live's child in a container's mount namespace).
// read_until reads every fd to EOF or until deadline, each into its string
// (at most cap bytes kept); false when the deadline passed first.
bool read_until(std::vector<std::pair<int, std::string*>> fds, std::size_t cap,
                std::chrono::steady_clock::time_point deadline);
// wait_status waits for pid (retrying EINTR) and returns its waitpid status.
int wait_status(pid_t pid);

}  // namespace specshim
