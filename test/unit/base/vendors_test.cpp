// SPDX-License-Identifier: Apache-2.0
// The vendor table's companion nodes, as the cdi modifier's grant check
// reads them: what a spec file may give every device without a grant.
#include "specshim/base/vendors.h"

#include <catch2/catch.hpp>

using specshim::companion_node;

TEST_CASE("vendors: companion nodes are the table's companions and shared nodes, never a device") {
  for (const char* yes : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                          "/dev/nvidia-caps/nvidia-cap1", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc",
                          "/dev/dvpp_cmdlist", "/dev/vfio/vfio", "/dev/kfd", "/dev/dri/renderD128"}) {
    CAPTURE(yes);
    CHECK(companion_node(yes));
  }
  for (const char* no : {"/dev/nvidia0", "/dev/nvidia3", "/dev/davinci2", "/dev/vfio/12",
                         "/dev/nvidia-caps/nvidia-cap30", "/dev/fuse", "/dev/sda", ""}) {
    CAPTURE(no);
    CHECK_FALSE(companion_node(no));
  }
}
