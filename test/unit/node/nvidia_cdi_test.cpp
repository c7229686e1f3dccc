// SPDX-License-Identifier: Apache-2.0
// specshim/node/nvidia_cdi.h: the driver's version as both kernel modules
// write it, and a spec's freshness by the versions its libraries carry and
// the GPUs it names.
#include "specshim/node/nvidia_cdi.h"

#include <catch2/catch.hpp>

#include "tempdir.h"

using namespace specshim;
using specshim::test::TempDir;
using specshim::test::write_file;

namespace {

cdi::Device device(const std::string& name, const std::string& node) {
  cdi::Device d;
  d.name = name;
  cdi::DeviceNode n;
  n.path = node;
  d.edits.device_nodes.push_back(n);
  return d;
}

cdi::Mount library(const std::string& path) {
  cdi::Mount m;
  m.host_path = m.container_path = path;
  return m;
}

}  // namespace

TEST_CASE("driver_version reads the proprietary and the open kernel module's first line, nothing without a driver") {
  TempDir tmp;
  CHECK_FALSE(nvidia::driver_version(tmp.path()));
  write_file(tmp / "driver/nvidia/version",
             "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
             "GCC version:  gcc version 12.2.0\n");
  CHECK(nvidia::driver_version(tmp.path()) == "535.104.05");
  write_file(tmp / "driver/nvidia/version",
             "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.10  Release Build  (dvs-builder@U16)\n");
  CHECK(nvidia::driver_version(tmp.path()) == "570.86.10");
  write_file(tmp / "driver/nvidia/version", "NVRM version: something else\n");
  CHECK_FALSE(nvidia::driver_version(tmp.path()));
}

TEST_CASE("freshness: libraries of the driver's version and every GPU named by UUID or node is fresh") {
  cdi::SpecFile spec;
  spec.kind = "nvidia.com/gpu";
  spec.edits.mounts = {library("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"),
                       library("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15"),
                       library("/usr/lib/x86_64-linux-gnu/libc.so.6"), library("/usr/bin/nvidia-smi")};
  spec.devices = {device("0", "/dev/nvidia0"), device("GPU-bbbb", "/dev/nvidia1"), device("all", "/dev/nvidia0")};
  std::vector<nvidia::Gpu> gpus = {{"GPU-aaaa", 0, "0000:01:00.0"}, {"GPU-BBBB", 1, "0000:02:00.0"}};
  auto f = nvidia::freshness(spec, "550.54.15", gpus);
  CHECK(f.versions == std::vector<std::string>{"550.54.15"});
  CHECK(f.stale.empty());

  auto upgraded = nvidia::freshness(spec, "555.42.02", gpus);
  REQUIRE(upgraded.stale.size() == 1);
  CHECK(upgraded.stale[0] == "its library mounts are driver 550.54.15's; the driver is 555.42.02");

  gpus.push_back({"GPU-cccc", 2, "0000:03:00.0"});
  gpus.erase(gpus.begin() + 1);  // GPU-bbbb is gone, GPU-cccc came
  auto swapped = nvidia::freshness(spec, "550.54.15", gpus);
  CHECK(swapped.stale == std::vector<std::string>{"it has no device for GPU-cccc (/dev/nvidia2)",
                                                  "its device `GPU-bbbb` is a GPU the driver does not list"});
}
