// SPDX-License-Identifier: Apache-2.0
// The dev box (devbox.h): dockerd inside a privileged container that was
// given 2 of the node's 4 GPUs, with specshim as dockerd's default runtime,
// the shipped config. Issue 53.
#include "devbox.h"

#include <catch2/catch.hpp>

using namespace specshim::e2e;
using Catch::Matchers::Contains;

TEST_CASE("a container of the dev box's dockerd runs through specshim", "[devbox]") {
  DevBox box;
  // The busybox image has no user 10001: the name comes from the passwd
  // modifier (on in the shipped config), which only specshim applies.
  auto r = box.docker({"run", "--rm", "--user", "10001", "busybox", "id", "-un"});
  INFO(r.out << r.err << box.diagnostics());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "user10001\n");
  // Without specshim the same image has no name for the uid.
  auto plain = box.docker({"run", "--rm", "--runtime", "runc", "--user", "10001", "busybox", "id", "-un"});
  INFO(plain.out << plain.err);
  CHECK(plain.exit_code != 0);
  CHECK_THAT(plain.err, Contains("unknown ID 10001"));
  // The dev box holds the GPUs it was given, and only those.
  CHECK(box.exec_ok({"ls", "/dev"}).find("nvidia0") == std::string::npos);
  CHECK_THAT(box.exec_ok({"stat", "-c", "%n %t:%T", "/dev/nvidia1", "/dev/nvidia3", "/dev/nvidiactl"}),
             Contains("/dev/nvidia1 c3:1") && Contains("/dev/nvidia3 c3:3") && Contains("/dev/nvidiactl c3:ff"));
}
