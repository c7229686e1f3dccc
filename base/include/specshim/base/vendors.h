// SPDX-License-Identifier: Apache-2.0
// What a vendor's device node needs beside itself to be usable: the one table
// of them (src/vendors.cpp). diagnose's companions layer checks a running
// container against it; the cdi modifier lets a spec file's own companion
// nodes come with a device the grant bounds.
#pragma once

#include <string_view>
#include <vector>

namespace specshim {

// Vendor is one row: the device kind's node pattern and what it needs.
struct Vendor {
  std::string_view name;                    // "NVIDIA GPU"
  std::string_view node;                    // fnmatch(3) pattern of the device's container path
  std::vector<std::string_view> nodes;      // companion nodes (a pattern: at least one must match)
  std::vector<std::string_view> optional;   // companion nodes only some programs need: a warning when missing
  std::vector<std::string_view> libraries;  // sonames the container's dynamic loader must find
  bool iommu_group = false;                 // /dev/vfio/N: every device of IOMMU group N bound to vfio-pci
  bool locked_memory = false;               // DMA pins memory: RLIMIT_MEMLOCK or CAP_IPC_LOCK
  // shared: nodes the vendor's CDI spec gives with every device (spec-level)
  // that open no device of their own and no program needs: never required,
  // but no grant is needed for them either
  std::vector<std::string_view> shared = {};
};
const std::vector<Vendor>& vendors();

// companion_node tells a container path that is some vendor's shared node,
// or its companion (required or optional) and no vendor's device:
// /dev/nvidiactl, /dev/nvidia-modeset, /dev/kfd, not /dev/nvidia3.
bool companion_node(std::string_view path);

}  // namespace specshim
