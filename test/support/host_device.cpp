// SPDX-License-Identifier: Apache-2.0
#include "host_device.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>

namespace specshim::test {

HostDevice::HostDevice() {
  std::filesystem::create_directories(node.parent_path());
  REQUIRE(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 11)) == 0);
}

std::vector<std::string> accel_probe(const std::string& then) {
  return {"/bin/sh", "-c",
          "stat -c '%F %t:%T' /dev/accel0; " + (then.empty() ? "" : then + "; ") +
              "(exec 3>/dev/accel0) 2>&1 && echo open-ok; true"};
}

}  // namespace specshim::test
