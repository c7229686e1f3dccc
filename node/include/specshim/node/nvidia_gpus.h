// SPDX-License-Identifier: Apache-2.0
// NVIDIA GPUs as the driver lists them, one directory per GPU:
// <proc>/driver/nvidia/gpus/<PCI address>/information, whose "GPU UUID:"
// and "Device Minor:" lines tie a UUID (what users and nvidia-smi name) to
// the node /dev/nvidia<minor> (what a container is given).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace specshim::nvidia {

struct Gpu {
  std::string uuid;     // "GPU-8f3c5d2e-..."
  int minor = 0;        // Device Minor
  std::string address;  // the PCI address (the directory's name)
  std::string node() const { return "/dev/nvidia" + std::to_string(minor); }
};

// parse_information reads one information file; what names it in errors.
// Throws Error when the UUID or the minor is missing or malformed.
Gpu parse_information(std::string_view text, const std::string& what);

// read_gpus lists the GPUs below proc ("/proc"; tests pass a tree), sorted
// by minor. No driver (no such directory) is an empty list; an unreadable
// or malformed file throws Error naming it.
std::vector<Gpu> read_gpus(const std::filesystem::path& proc = "/proc");

// find_gpu returns the GPU whose UUID is uuid (case-insensitive). Throws
// Error naming the UUIDs that exist when none is.
const Gpu& find_gpu(const std::vector<Gpu>& gpus, std::string_view uuid, const std::filesystem::path& proc = "/proc");

}  // namespace specshim::nvidia
