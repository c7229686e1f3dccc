// SPDX-License-Identifier: Apache-2.0
// [device-plugin.dra] in the shim's own chain (device-plugin, cdi) built from
// config text, through the helper, against the fake kubelet: a sibling gets
// its source containers' DRA claims, resolved by CDI specs whose nodes are
// /dev/null on the host.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "device_plugin_support.h"
#include "error_of.h"
#include "fake_kubelet.h"
#include "specshim/modifiers/chain.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/modifiers/registry.h"
#include "tempdir.h"

using namespace specshim;
using namespace specshim::device_plugin;
using Catch::Contains;
using test::annotation;
using test::cri_annotations;
using test::device_paths;
using test::Logs;
using test::sibling;
using test::spec_with;
namespace fs = std::filesystem;

namespace {

// A CDI spec for the GPU driver (two devices) and one for the NIC driver.
constexpr const char* kGpuSpec = R"({"cdiVersion": "0.6.0", "kind": "gpu.example.com/gpu", "devices": [
  {"name": "claim-1-gpu0", "containerEdits": {"deviceNodes": [{"path": "/dev/gpu0", "hostPath": "/dev/null"}],
                                               "env": ["GPU0=1"]}},
  {"name": "claim-1-gpu1", "containerEdits": {"deviceNodes": [{"path": "/dev/gpu1", "hostPath": "/dev/null"}]}},
  {"name": "claim-3-gpu2", "containerEdits": {"deviceNodes": [{"path": "/dev/gpu2", "hostPath": "/dev/null"}]}}]})";
constexpr const char* kNicSpec = R"({"cdiVersion": "0.6.0", "kind": "nic.example.com/nic", "devices": [
  {"name": "claim-2-nic0", "containerEdits": {"deviceNodes": [{"path": "/dev/nic0", "hostPath": "/dev/null"}]}}]})";

kubelet::ClaimResource claim_device(const std::string& driver, const std::string& name, std::vector<std::string> cdi) {
  return {
      .driver_name = driver, .pool_name = "node-1", .device_name = name, .cdi_devices = std::move(cdi), .share_id = {}};
}

// gpus is a claim of two GPUs; nic a claim of the NIC driver.
kubelet::DynamicResource gpus() {
  return {"gpus",
          "ns",
          {claim_device("gpu.example.com", "gpu-0", {"gpu.example.com/gpu=claim-1-gpu0"}),
           claim_device("gpu.example.com", "gpu-1", {"gpu.example.com/gpu=claim-1-gpu1"})}};
}
kubelet::DynamicResource nic() {
  return {"net", "ns", {claim_device("nic.example.com", "nic-0", {"nic.example.com/nic=claim-2-nic0"})}};
}

kubelet::ContainerAssignment claims(std::vector<kubelet::DynamicResource> d) {
  kubelet::ContainerAssignment a;
  a.dynamic_resources = std::move(d);
  return a;
}

// DraNode is a kubelet root with the fake kubelet, pod ns/pod, a CDI spec dir,
// and the shim's own chain (device-plugin, cdi) built from config text.
struct DraNode {
  test::TempDir tmp;
  fs::path root = tmp / "kubelet";
  fs::path cdi_dir = tmp / "cdi";
  test::FakeKubelet kubelet{root};

  DraNode() {
    ::setenv("SPECSHIM_KUBELET_HELPER", SPECSHIM_KUBELET_HELPER_BIN, 1);
    fs::create_directories(cdi_dir);
    test::write_file(cdi_dir / "gpu.json", kGpuSpec);
    test::write_file(cdi_dir / "nic.json", kNicSpec);
  }

  std::string config(const std::string& dra, const std::string& resources = "") const {
    return "[chain]\norder = [\"device-plugin\", \"cdi\"]\n[cdi]\nspec-dirs = [\"" + cdi_dir.string() +
           "\"]\n[device-plugin]\nenabled = true\nkubelet-root = \"" + root.string() + "\"\n" + resources +
           "[device-plugin.dra]\n" + dra;
  }

  // run is one create: a fresh chain over spec.
  ChainResult run(Spec& spec, const std::string& toml) {
    auto doc = config::Document::parse(toml, "test.toml");
    auto top = doc.root();
    Chain chain = build_chain(top);
    top.finish();
    Context ctx;
    ctx.container_id = "ctr-1";
    ctx.kind = pod_identity::kind_of(spec);
    return chain.run(spec, ctx);
  }
};

}  // namespace

// ---- [device-plugin.dra]: a sibling gets its source containers' DRA claims, resolved by cdi ----

TEST_CASE("dra: container-sync hands over both GPUs of a claim and a NIC claim of another driver") {
  DraNode node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {}}, {"side", {}}});
  node.kubelet.assign("ns", "pod", "main", claims({gpus(), nic()}));
  Logs logs;
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  node.run(spec, node.config("enabled = true\n"));
  CHECK(annotation(spec, kCdiDevices) ==
        "gpu.example.com/gpu=claim-1-gpu0,gpu.example.com/gpu=claim-1-gpu1,nic.example.com/nic=claim-2-nic0");
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0", "/dev/gpu1", "/dev/nic0"});
  CHECK(spec.json()["process"]["env"] == Json{"PATH=/bin", "GPU0=1"});
  CHECK(node.kubelet.calls("Get") == 1);  // one PodResources answer per create, across passes
  CHECK_THAT(logs.all(), Contains("CDI device gpu.example.com/gpu=claim-1-gpu1 for container `ctr-1` of pod "
                                  "`ns/pod`: from DRA claim `ns/gpus` of container `main`, driver "
                                  "`gpu.example.com`, device `node-1/gpu-1`"));

  SECTION("a second create on the output changes nothing") {
    Json once = spec.json();
    CHECK(node.run(spec, node.config("enabled = true\n")).passes == 1);
    CHECK(spec.json() == once);
  }
}

TEST_CASE("dra: drivers filters the claims' devices") {
  DraNode node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {}}});
  node.kubelet.assign("ns", "pod", "main", claims({gpus(), nic()}));
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  node.run(spec, node.config("enabled = true\ndrivers = [\"nic.example.com\"]\n"));
  CHECK(annotation(spec, kCdiDevices) == "nic.example.com/nic=claim-2-nic0");
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/nic0"});
}

TEST_CASE("dra: pod-sync takes the claims of every listed container, each name once") {
  DraNode node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"a", {}}, {"b", {}}, {"c", {}}});
  node.kubelet.assign("ns", "pod", "a", claims({gpus()}));
  node.kubelet.assign("ns", "pod", "b", claims({nic(), gpus()}));  // a claim shared by a and b
  Spec spec = spec_with(sibling({{kDevicesFromPod, "true"}}));
  node.run(spec, node.config("enabled = true\n"));
  CHECK(annotation(spec, kCdiDevices) ==
        "gpu.example.com/gpu=claim-1-gpu0,gpu.example.com/gpu=claim-1-gpu1,nic.example.com/nic=claim-2-nic0");
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0", "/dev/gpu1", "/dev/nic0"});
}

TEST_CASE("dra: off by default, and off next to device-plugin resources, which handle only their devices") {
  DraNode node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {}}});
  node.kubelet.assign("ns", "pod", "main", claims({gpus()}));
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  Json before = spec.json();
  node.run(spec, node.config(""));
  CHECK(spec.json() == before);
  CHECK(node.kubelet.calls("Get") == 0);
  node.run(spec, node.config("enabled = false\n",
                             "[[device-plugin.resources]]\nname = \"example.com/gpu\"\n"
                             "providers = [\"container-sync\"]\n"));
  CHECK(spec.json() == before);  // main holds no example.com/gpu
  CHECK(node.kubelet.calls("Get") == 1);
}

TEST_CASE("dra: a kubelet that sends no dynamic_resources gives nothing, and no error") {
  DraNode node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}, {kDevicesFromPod, "true"}}));
  Json before = spec.json();
  node.run(spec, node.config("enabled = true\n"));
  CHECK(spec.json() == before);
  CHECK(node.kubelet.calls("Get") == 1);
}

TEST_CASE("dra: a claim naming a CDI device no spec defines fails naming the claim, driver and CDI name") {
  DraNode node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {}}});
  node.kubelet.assign(
      "ns", "pod", "main",
      claims(
          {gpus(), {"lost", "ns", {claim_device("gpu.example.com", "gpu-7", {"gpu.example.com/gpu=claim-9-gpu7"})}}}));
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  Json before = spec.json();
  CHECK_THAT(test::described_error([&] { node.run(spec, node.config("enabled = true\n")); }),
             Contains("cdi: unresolvable CDI devices gpu.example.com/gpu=claim-9-gpu7 (from DRA claim `ns/lost` of "
                      "container `main`, driver `gpu.example.com`, device `node-1/gpu-7`); searched " +
                      node.cdi_dir.string()));

  SECTION("an unknown source container fails naming the pod; so does a malformed CDI name") {
    Spec other = spec_with(sibling({{kDevicesFrom, "mian"}}));
    CHECK_THAT(test::described_error([&] { node.run(other, node.config("enabled = true\n")); }),
               Contains("device-plugin: read the DRA claims of container `mian` (annotation "
                        "specshim.io/devices-from) for container `ctr-1` of pod `ns/pod` (socket " +
                        kubelet::pod_resources_socket(node.root).string() + "): pod `ns/pod` has no container `mian`"));
    node.kubelet.assign(
        "ns", "pod", "main",
        claims({{"bad", "ns", {claim_device("gpu.example.com", "gpu-8", {"gpu.example.com/gpu=a,b"})}}}));
    Spec bad = spec_with(sibling({{kDevicesFrom, "main"}}));
    CHECK_THAT(test::described_error([&] { node.run(bad, node.config("enabled = true\n")); }),
               Contains("DRA claim `ns/bad` of container `main`, driver `gpu.example.com`, device `node-1/gpu-8`: "
                        "invalid CDI device name `gpu.example.com/gpu=a,b`"));
  }
}

TEST_CASE("dra: a CRI container's own claims are never handed over") {
  DraNode node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {}}, {"side", {}}});
  node.kubelet.assign("ns", "pod", "main", claims({gpus()}));
  node.kubelet.assign("ns", "pod", "side", claims({nic(), gpus()}));

  SECTION("without a sync annotation nothing is asked") {
    Spec spec = spec_with(cri_annotations("main"));
    Json before = spec.json();
    node.run(spec, node.config("enabled = true\n"));
    CHECK(spec.json() == before);
    CHECK(node.kubelet.calls("Get") == 0);
  }
  SECTION("pod-sync in a CRI container adds the other containers' claims, not the ones it holds") {
    Json a = cri_annotations("main");
    a[kDevicesFromPod] = "true";
    Spec spec = spec_with(a);
    node.run(spec, node.config("enabled = true\n"));
    CHECK(annotation(spec, kCdiDevices) == "nic.example.com/nic=claim-2-nic0");
    CHECK(device_paths(spec) == std::vector<std::string>{"/dev/nic0"});
  }
}
