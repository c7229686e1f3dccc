// SPDX-License-Identifier: Apache-2.0
// A host-side accelerator for device tests with real runc: a character node
// 1:11 (/dev/kmsg's numbers) under a test dir. runc's default allow list
// (1:3 null, 1:5 zero, 1:7 full, 1:8 random, 1:9 urandom, 5:x, 136:*, 10:200)
// does not cover it, so only a rule a modifier added lets a container open
// it; opening it write-only without writing is harmless.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tempdir.h"

namespace specshim::test {

struct HostDevice {
  TempDir tmp;
  std::filesystem::path node = tmp / "host-dev" / "accel0";

  HostDevice();  // creates the node
};

// StandInGpu is an NVIDIA GPU as the driver lists it under proc
// (<proc>/driver/nvidia/gpus/<address>/information: its UUID and minor), with
// a stand-in node /dev/nvidia<minor> on the host: the 1:11 test numbers (no
// driver gives a GPU that minor, so tests pick minors apart), removed at the
// end. Tests that need two GPUs to be two devices give the second another
// node minor (c 1:12: it never opens, but runc's default rules do not allow
// it either, so only what is attached reaches it).
class StandInGpu {
 public:
  StandInGpu(const std::filesystem::path& proc, const std::string& address, const std::string& uuid, int minor,
             unsigned node_minor = 11);
  ~StandInGpu();
  StandInGpu(const StandInGpu&) = delete;
  StandInGpu& operator=(const StandInGpu&) = delete;
  const std::string& node() const { return node_; }

 private:
  std::string node_;
};

// list_gpu writes the driver's information file of a GPU with no node.
void list_gpu(const std::filesystem::path& proc, const std::string& address, const std::string& uuid, int minor);

// accel_probe is a container command that prints the type and numbers of
// /dev/accel0, then `then` (a shell command, may be empty), then whether the
// node opens for writing: `kAccelOpened`, or `kAccelDenied` by the cgroup.
std::vector<std::string> accel_probe(const std::string& then = "");
inline constexpr const char* kAccelVisible = "character special file 1:b\n";
inline constexpr const char* kAccelOpened = "open-ok\n";
inline constexpr const char* kAccelDenied = "/bin/sh: can't create /dev/accel0: Operation not permitted\n";

}  // namespace specshim::test
