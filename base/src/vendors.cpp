// SPDX-License-Identifier: Apache-2.0
// What a vendor's device node needs beside itself, one row per device kind.
// Adding a vendor is a row here (specshim/base/vendors.h).
#include "specshim/base/vendors.h"

#include <fnmatch.h>

#include <algorithm>
#include <string>

namespace specshim {

const std::vector<Vendor>& vendors() {
  static const std::vector<Vendor> table = {
      // A GPU node is useless without the control node and UVM (CUDA's unified memory); the user-space
      // driver (libcuda) and NVML come from the host's driver, mounted by the runtime or a CDI spec.
      // nvidia-uvm-tools serves profilers (CUPTI, Nsight): its absence is a warning.
      {"NVIDIA GPU",
       "/dev/nvidia[0-9]*",
       {"/dev/nvidiactl", "/dev/nvidia-uvm"},
       {"/dev/nvidia-uvm-tools"},
       {"libcuda.so.1", "libnvidia-ml.so.1"},
       false,
       false,
       {"/dev/nvidia-modeset", "/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia-caps/nvidia-cap2"}},
      // A VFIO group node needs the container node, a group whose every device is bound to vfio-pci,
      // and room to pin the memory it maps for DMA.
      {"VFIO group", "/dev/vfio/[0-9]*", {"/dev/vfio/vfio"}, {}, {}, true, true},
      // ROCm opens /dev/kfd and a render node of the GPU.
      // /dev/kfd is ROCm's one compute interface for every GPU: a spec gives it with each of them.
      {"AMD GPU (ROCm)", "/dev/kfd", {"/dev/dri/renderD*"}, {}, {}, false, false, {"/dev/kfd"}},
      // Ascend NPUs need the manager, shared-virtual-memory and host-device-communication nodes.
      // Ascend's CDI specs also give the media-processing command list node to every NPU.
      {"Huawei Ascend NPU",
       "/dev/davinci[0-9]*",
       {"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"},
       {},
       {},
       false,
       false,
       {"/dev/dvpp_cmdlist"}},
  };
  return table;
}

bool companion_node(std::string_view path) {
  std::string p(path);
  auto matches = [&](std::string_view pattern) { return ::fnmatch(std::string(pattern).c_str(), p.c_str(), 0) == 0; };
  auto any = [&](const std::vector<std::string_view>& patterns) {
    return std::any_of(patterns.begin(), patterns.end(), matches);
  };
  const auto& table = vendors();
  if (std::any_of(table.begin(), table.end(), [&](const Vendor& v) { return any(v.shared); })) return true;
  if (std::any_of(table.begin(), table.end(), [&](const Vendor& v) { return matches(v.node); })) return false;
  return std::any_of(table.begin(), table.end(), [&](const Vendor& v) { return any(v.nodes) || any(v.optional); });
}

}  // namespace specshim
