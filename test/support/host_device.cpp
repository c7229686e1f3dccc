// SPDX-License-Identifier: Apache-2.0
#include "host_device.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "tempdir.h"

namespace specshim::test {

HostDevice::HostDevice() {
  std::filesystem::create_directories(node.parent_path());
  REQUIRE(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 11)) == 0);
}

void list_gpu(const std::filesystem::path& proc, const std::string& address, const std::string& uuid, int minor) {
  write_file(proc / "driver/nvidia/gpus" / address / "information",
             "Model: \t\t NVIDIA A100\nGPU UUID: \t " + uuid + "\nDevice Minor: \t " + std::to_string(minor) + "\n");
}

StandInGpu::StandInGpu(const std::filesystem::path& proc, const std::string& address, const std::string& uuid,
                       int minor, unsigned node_minor)
    : node_("/dev/nvidia" + std::to_string(minor)) {
  REQUIRE(::mknod(node_.c_str(), S_IFCHR | 0666, makedev(1, node_minor)) == 0);
  list_gpu(proc, address, uuid, minor);
}

StandInGpu::~StandInGpu() {
  ::unlink(node_.c_str());
}

std::vector<std::string> accel_probe(const std::string& then) {
  return {"/bin/sh", "-c",
          "stat -c '%F %t:%T' /dev/accel0; " + (then.empty() ? "" : then + "; ") +
              "(exec 3>/dev/accel0) 2>&1 && echo open-ok; true"};
}

}  // namespace specshim::test
