// SPDX-License-Identifier: Apache-2.0
// device-plugin through the real specshim binary and real runc: a device node
// from a fake plugin's answer must be in the container and openable. The fake
// kubelet and plugin run in this test process; specshim reaches them through
// its specshim-kubelet helper (found next to the binary). The node is
// test/support's HostDevice: only the modifier's own rule lets the container
// open it.
#include <catch2/catch.hpp>

#include "container.h"
#include "fake_kubelet.h"
#include "host_device.h"
#include "specshim/kubelet/client.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using specshim::Json;
using specshim::kubelet::AllocateResponse;

namespace {

const std::vector<std::string> kProbe = accel_probe("echo \"$ACCEL\"");
const std::string kVisible = std::string(kAccelVisible) + "accel-0\n";

struct Host : HostDevice {
  fs::path root = tmp / "kubelet";

  AllocateResponse answer(const std::string& permissions) const {
    AllocateResponse a;
    a.envs = {{"ACCEL", "accel-0"}};
    a.devices = {{"/dev/accel0", node.string(), permissions}};
    return a;
  }
  std::string config(const std::string& resource_extra) const {
    return "[chain]\norder = [\"device-plugin\"]\n\n[device-plugin]\nenabled = true\nkubelet-root = \"" +
           root.string() + "\"\n\n[[device-plugin.resources]]\nname = \"example.com/accel\"\n" + resource_extra;
  }
};

BusyboxBundle probe_bundle(const Host& host, const Json& annotations) {
  BusyboxBundle b(host.tmp / "bundle");
  b.set_args(kProbe);
  b.spec()["annotations"] = annotations;
  b.save();
  return b;
}

Json cri_container() {
  return {{"io.kubernetes.cri.container-type", "container"},
          {"io.kubernetes.cri.sandbox-namespace", "ns"},
          {"io.kubernetes.cri.sandbox-name", "pod"},
          {"io.kubernetes.cri.sandbox-uid", "uid-it"},
          {"io.kubernetes.cri.container-name", "main"}};
}

}  // namespace

TEST_CASE("device-plugin: the kubelet checkpoint's answer puts an openable device into a runc container") {
  Host host;
  FakeKubelet kubelet(host.root);
  write_checkpoint(host.root, {{"uid-it", "main", "example.com/accel", {{"0", {"accel-0"}}}, host.answer("rw")}}, {},
                   CheckpointLayout::numa);
  BusyboxBundle b = probe_bundle(host, cri_container());
  Shim shim(host.tmp.path(), host.config("providers = [\"kubelet\"]\n"));
  auto r = shim.run(b, unique_id("it-dp-kubelet"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out == kVisible + kAccelOpened);
  REQUIRE(kubelet.calls("Get") == 0);
}

TEST_CASE("device-plugin: a sibling's direct request is allocated through the helper and opens") {
  Host host;
  FakeKubelet kubelet(host.root);
  kubelet.add_pod("ns", "pod", "uid-it", {{"main", {{"example.com/accel", {"accel-0"}}}}});
  FakeDevicePlugin plugin(specshim::kubelet::device_plugin_dir(host.root) / "accel.sock", {"accel-0"});
  plugin.respond(host.answer("rw"));
  BusyboxBundle b = probe_bundle(host, {{"specshim.io/pod", "ns/pod"}, {"example.com/accel", R"(["accel-0"])"}});
  Shim shim(host.tmp.path(), host.config("providers = [\"direct\"]\nallocate = true\n"));
  auto r = shim.run(b, unique_id("it-dp-direct"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out == kVisible + kAccelOpened);
  REQUIRE(plugin.allocations() == std::vector<std::vector<std::string>>{{"accel-0"}});
}

TEST_CASE("device-plugin: the rule carries the plugin's permissions (read-only: opening for write is refused)") {
  Host host;
  FakeKubelet kubelet(host.root);
  write_checkpoint(host.root, {{"uid-it", "main", "example.com/accel", {{"0", {"accel-0"}}}, host.answer("r")}}, {},
                   CheckpointLayout::numa);
  BusyboxBundle b = probe_bundle(host, cri_container());
  Shim shim(host.tmp.path(), host.config("providers = [\"kubelet\"]\n"));
  auto r = shim.run(b, unique_id("it-dp-ro"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out == kVisible + kAccelDenied);
}

TEST_CASE("device-plugin: a plugin that is down fails the create with pod, container, resource and socket in --log") {
  Host host;
  FakeKubelet kubelet(host.root);
  kubelet.add_pod("ns", "pod", "uid-it", {{"main", {{"example.com/accel", {"accel-0"}}}}});
  BusyboxBundle b = probe_bundle(host, {{"specshim.io/pod", "ns/pod"}, {"example.com/accel", R"(["accel-0"])"}});
  Shim shim(host.tmp.path(), host.config("providers = [\"direct\"]\nallocate = true\nsocket = \"accel.sock\"\n"));
  std::string id = unique_id("it-dp-down");
  auto r = shim.call(b, {"create", "--bundle", b.dir().string(), id}, false);
  REQUIRE(r.exit_code == 1);
  std::string socket = (specshim::kubelet::device_plugin_dir(host.root) / "accel.sock").string();
  REQUIRE_THAT(Shim::log(b), Contains("specshim: device-plugin: resolve `example.com/accel` accel-0 for container `" +
                                      id + "` of pod `ns/pod` (socket " + socket +
                                      "): device plugin for `example.com/accel`: "
                                      "socket `" +
                                      socket + "` does not exist (is the plugin running?)"));
  REQUIRE(shim.call(b, {"state", id}).exit_code != 0);
}

// The claim's device is the test's host node, named by a CDI spec in a temp
// spec dir; only cdi's rule for it lets the container open it.
TEST_CASE("device-plugin: a sibling gets its source container's DRA claim, resolved by cdi, and opens its node") {
  Host host;
  FakeKubelet kubelet(host.root);
  kubelet.add_pod("ns", "pod", "uid-it", {{"main", {}}});
  specshim::kubelet::ContainerAssignment claimed;
  specshim::kubelet::ClaimResource accel{.driver_name = "accel.example.com",
                                         .pool_name = "node",
                                         .device_name = "accel-0",
                                         .cdi_devices = {"example.com/accel=claim-0"},
                                         .share_id = {}};
  claimed.dynamic_resources = {{"accel", "ns", {accel}}};
  kubelet.assign("ns", "pod", "main", claimed);
  fs::path spec_dir = host.tmp / "cdi";
  fs::create_directories(spec_dir);
  write_file(spec_dir / "accel.json",
             R"({"cdiVersion": "0.6.0", "kind": "example.com/accel", "devices": [{"name": "claim-0",
                 "containerEdits": {"env": ["ACCEL=accel-0"],
                                    "deviceNodes": [{"path": "/dev/accel0", "hostPath": ")" +
                 host.node.string() + R"("}]}}]})");
  BusyboxBundle b = probe_bundle(host, {{"specshim.io/pod", "ns/pod"}, {"specshim.io/devices-from", "main"}});
  Shim shim(host.tmp.path(), "[chain]\norder = [\"device-plugin\", \"cdi\"]\n\n[cdi]\nspec-dirs = [\"" +
                                 spec_dir.string() + "\"]\n\n[device-plugin]\nenabled = true\nkubelet-root = \"" +
                                 host.root.string() + "\"\n\n[device-plugin.dra]\nenabled = true\n");
  // dry-run runs the same chain: its diff shows the hand-over and the node.
  auto dry = run_process({SPECSHIM_BINARY, "dry-run", "--bundle", b.dir().string(), "--format", "diff"}, shim.env());
  INFO(dry.err);
  REQUIRE(dry.exit_code == 0);
  REQUIRE_THAT(dry.out, Contains(R"("path": "/annotations/specshim.io~1cdi-devices")") &&
                            Contains(R"("value": "example.com/accel=claim-0")") &&
                            Contains(R"("path": "/dev/accel0")") && Contains(R"("value": "ACCEL=accel-0")"));
  REQUIRE(kubelet.calls("Get") == 1);

  auto r = shim.run(b, unique_id("it-dp-dra"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out == kVisible + kAccelOpened);
  REQUIRE(kubelet.calls("Get") == 2);
}
