// SPDX-License-Identifier: Apache-2.0
// specshim reconcile on running runc containers (busybox, as root): the
// desired-state file's wants are attached, dropped ones detached, hand-made
// attaches survive. The device is a c 1:11 node in a temp dir on the host
// (test/support/host_device.h): runc's default rules do not cover it.
#include <catch2/catch.hpp>

#include "container.h"
#include "host_device.h"
#include "running.h"
#include "specshim/spec.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using specshim::Json;

namespace {

std::vector<std::string> opens(const std::string& path) {
  return {"/bin/sh", "-c", "[ -c " + path + " ] && (: > " + path + ") 2>/dev/null && echo open-ok || echo open-failed"};
}

struct Host : HostDevice {
  fs::path config = tmp / "specshim.toml";
  fs::path desired = tmp / "etc" / "hotplug.yaml";
  Host() {
    fs::create_directories(desired.parent_path());
    write_file(config, "[runtime]\npath = \"/usr/sbin/runc\"\n\n[hotplug]\ndesired = \"" + desired.string() + "\"\n");
  }
};

}  // namespace

TEST_CASE("reconcile: a container the file selects by id gets the device, and loses it once the file drops it") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  write_file(host.desired,
             "containers:\n  - id: " + c.id() + "\n    devices: [\"" + host.node.string() + ":/dev/kmsg-test:rw\"]\n");
  auto r = specshim("reconcile", {});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "container `" + c.id() + "`: attached /dev/kmsg-test (c 1:11 rw, mknod) for device " +
                     host.node.string() + ":/dev/kmsg-test:rw\n");
  CHECK(c.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  Json rec = specshim.attached();
  CHECK(rec["devices"][0]["reconcile"] == Json::array({"device " + host.node.string() + ":/dev/kmsg-test:rw"}));

  r = specshim("reconcile", {});
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());

  write_file(host.desired, "containers: []\n");
  r = specshim("reconcile", {});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "container `" + c.id() + "`: detached /dev/kmsg-test (c 1:11)\n");
  CHECK(c.exec(opens("/dev/kmsg-test")).out == "open-failed\n");
  CHECK_FALSE(c.rule_allows());
}
