// SPDX-License-Identifier: Apache-2.0
// What a vendor's device node needs beside itself, one row per device kind.
// Adding a vendor is a row here; companions.cpp reads the table.
#include "diagnose/diagnose.h"

namespace specshim::shim::diagnose {

const std::vector<Vendor>& vendors() {
  static const std::vector<Vendor> table = {
      // A GPU node is useless without the control node and UVM (CUDA's unified memory); the user-space
      // driver (libcuda) and NVML come from the host's driver, mounted by the runtime or a CDI spec.
      // nvidia-uvm-tools serves profilers (CUPTI, Nsight): its absence is a warning.
      {"NVIDIA GPU",
       "/dev/nvidia[0-9]*",
       {"/dev/nvidiactl", "/dev/nvidia-uvm"},
       {"/dev/nvidia-uvm-tools"},
       {"libcuda.so.1", "libnvidia-ml.so.1"}},
      // A VFIO group node needs the container node, a group whose every device is bound to vfio-pci,
      // and room to pin the memory it maps for DMA.
      {"VFIO group", "/dev/vfio/[0-9]*", {"/dev/vfio/vfio"}, {}, {}, true, true},
      // ROCm opens /dev/kfd and a render node of the GPU.
      {"AMD GPU (ROCm)", "/dev/kfd", {"/dev/dri/renderD*"}, {}, {}},
      // Ascend NPUs need the manager, shared-virtual-memory and host-device-communication nodes.
      {"Huawei Ascend NPU", "/dev/davinci[0-9]*", {"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}, {}, {}},
  };
  return table;
}

}  // namespace specshim::shim::diagnose
