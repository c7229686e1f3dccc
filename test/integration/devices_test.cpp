// SPDX-License-Identifier: Apache-2.0
// Device access through specshim with real runc on the devices cgroup: a node
// must be in the container's /dev (cdi) and the cgroup must let it be opened
// (cdi's own rule, or devices-cgroup). The node is test/support's
// HostDevice, which runc's default allow list does not cover.
#include <catch2/catch.hpp>

#include "container.h"
#include "host_device.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;

namespace {

const std::vector<std::string> kProbe = accel_probe();
const std::string kVisible = kAccelVisible;

// Host holds the test's host side: the device node and a CDI spec dir.
struct Host : HostDevice {
  fs::path cdi = tmp / "cdi";

  void spec(const std::string& permissions) const {
    write_file(cdi / "accel.yaml",
               "cdiVersion: 0.5.0\nkind: example.com/accel\ndevices:\n- name: \"0\"\n"
               "  containerEdits:\n    deviceNodes:\n    - path: /dev/accel0\n      hostPath: " +
                   node.string() + (permissions.empty() ? "" : "\n      permissions: " + permissions) + "\n");
  }
  std::string config(const std::string& order) const {
    return "[chain]\norder = " + order + "\n\n[cdi]\nspec-dirs = [\"" + cdi.string() + "\"]\n";
  }
};

BusyboxBundle probe_bundle(const Host& host, const std::string& annotation) {
  BusyboxBundle b(host.tmp / "bundle");
  b.set_args(kProbe);
  if (!annotation.empty()) b.spec()["annotations"]["cdi.k8s.io/test"] = annotation;
  b.save();
  return b;
}

// inject_without_rule puts the node into linux.devices only, as a device
// source that forgot the cgroup would.
void inject_without_rule(BusyboxBundle& b) {
  b.spec()["linux"]["devices"] =
      specshim::Json::array({{{"path", "/dev/accel0"}, {"type", "c"}, {"major", 1}, {"minor", 11}}});
  b.save();
}

// run_probe runs the bundle through specshim and runc and returns what the
// probe printed; the probe itself always exits 0.
std::string run_probe(const Host& host, const BusyboxBundle& b, const std::string& config) {
  Shim shim(host.tmp.path(), config);
  auto r = shim.run(b, unique_id("it-dev"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("cdi: a requested device is visible and openable in a runc container") {
  Host host;
  host.spec("");
  BusyboxBundle b = probe_bundle(host, "example.com/accel=0");
  REQUIRE(run_probe(host, b, host.config("[\"cdi\", \"devices-cgroup\"]")) == kVisible + kAccelOpened);
}

TEST_CASE("devices: a node without an allow rule is visible but EPERM (runc's defaults do not cover 1:11)") {
  Host host;
  BusyboxBundle b = probe_bundle(host, "");
  inject_without_rule(b);
  REQUIRE(run_probe(host, b, "[chain]\norder = []\n") == kVisible + kAccelDenied);
}

TEST_CASE("devices-cgroup: the missing allow rule is added and the node opens") {
  Host host;
  BusyboxBundle b = probe_bundle(host, "");
  inject_without_rule(b);
  REQUIRE(run_probe(host, b, "[chain]\norder = [\"devices-cgroup\"]\n") == kVisible + kAccelOpened);
}

TEST_CASE("cdi: the spec's permissions narrow the rule, and devices-cgroup does not widen it") {
  Host host;
  host.spec("rm");
  BusyboxBundle b = probe_bundle(host, "example.com/accel=0");
  REQUIRE(run_probe(host, b, host.config("[\"cdi\", \"devices-cgroup\"]")) == kVisible + kAccelDenied);
}

TEST_CASE("cdi: an unresolvable device fails the create with the cause in --log, runc never runs") {
  Host host;
  write_file(host.cdi / "broken.yaml", "cdiVersion: 0.5.0\nkind: example.com/accel\ndevices:\n- name: \"0\"\n");
  BusyboxBundle b = probe_bundle(host, "example.com/accel=0");
  Shim shim(host.tmp.path(), host.config("[\"cdi\", \"devices-cgroup\"]"));
  std::string id = unique_id("it-cdi-missing");
  auto r = shim.call(b, {"create", "--bundle", b.dir().string(), id}, false);
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(Shim::log(b), Contains("\"level\":\"error\",\"msg\":\"specshim: cdi: unresolvable CDI devices "
                                      "example.com/accel=0; spec files not loaded: " +
                                      (host.cdi / "broken.yaml").string() +
                                      ": line 4: devices[0] \\\"0\\\": invalid device, empty device edits"));
  REQUIRE(shim.call(b, {"state", id}).exit_code != 0);
}

TEST_CASE("cdi: a missing host device node fails the create naming the node") {
  Host host;
  host.spec("");
  fs::remove(host.node);
  BusyboxBundle b = probe_bundle(host, "example.com/accel=0");
  Shim shim(host.tmp.path(), host.config("[\"cdi\"]"));
  std::string id = unique_id("it-cdi-nonode");
  auto r = shim.call(b, {"create", "--bundle", b.dir().string(), id}, false);
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(Shim::log(b), Contains("inject CDI device example.com/accel=0: stat host device node `" +
                                      host.node.string() + "`: No such file or directory"));
  REQUIRE(shim.call(b, {"state", id}).exit_code != 0);
}
