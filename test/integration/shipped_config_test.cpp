// SPDX-License-Identifier: Apache-2.0
// The config users get (packaging/specshim.toml, which the .deb installs as
// its conffile /etc/specshim/config.toml and install-on-host.sh copies there),
// byte for byte, through the real specshim and real runc: every modifier it
// documents as on does its work. The shipped file once had a [chain] table of
// comments that turned every modifier off, and no test used the file itself.
#include <catch2/catch.hpp>

#include "container.h"
#include "host_device.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;

namespace {

const std::string kShipped = read_file(kShippedConfig);

}  // namespace

TEST_CASE("shipped config: a uid the image lacks gets a passwd entry (passwd)") {
  TempDir tmp;
  BusyboxBundle b(tmp / "bundle");
  b.set_user(10001, 10001);
  b.set_args({"/bin/sh", "-c", "id -un; id -gn"});
  b.save();
  Shim shim(tmp.path(), kShipped);
  auto r = shim.run(b, unique_id("it-shipped"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out == "user10001\ngroup10001\n");
}

TEST_CASE("shipped config: a device node without a cgroup rule gets one and opens (devices-cgroup)") {
  HostDevice host;
  BusyboxBundle b(host.tmp / "bundle");
  b.set_args(accel_probe());
  b.spec()["linux"]["devices"] =
      specshim::Json::array({{{"path", "/dev/accel0"}, {"type", "c"}, {"major", 1}, {"minor", 11}}});
  b.save();
  Shim shim(host.tmp.path(), kShipped);
  auto r = shim.run(b, unique_id("it-shipped"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out == std::string(kAccelVisible) + kAccelOpened);
}

TEST_CASE("shipped config: a CDI request is resolved from the default spec dirs (cdi)") {
  TempDir tmp;
  BusyboxBundle b(tmp / "bundle");
  b.spec()["annotations"]["cdi.k8s.io/test"] = "specshim-test.invalid/none=0";
  b.save();
  const std::string before = read_file(b.dir() / "config.json");
  Shim shim(tmp.path(), kShipped);
  auto r = shim.run(b, unique_id("it-shipped"));
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(Shim::log(b), Catch::Contains("unresolvable CDI devices specshim-test.invalid/none=0"));
  REQUIRE_THAT(Shim::log(b), Catch::Contains("searched /etc/cdi, /var/run/cdi"));
  REQUIRE(read_file(b.dir() / "config.json") == before);
}
