// SPDX-License-Identifier: Apache-2.0
// [device-plugin.dra]: a sibling created outside CRI gets the CDI names of
// its source containers' DRA claims, which the cdi modifier resolves against
// a spec dir. The chain is the one the shim builds from config text (its
// device-plugin talks to the fake kubelet through the specshim-kubelet
// helper process); CDI device nodes name /dev/null on the host.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <mutex>

#include "fake_kubelet.h"
#include "specshim/device_plugin.h"
#include "specshim/error.h"
#include "specshim/log.h"
#include "specshim/registry.h"
#include "tempdir.h"

using namespace specshim;
using Catch::Contains;
using kubelet::ClaimResource;
using kubelet::ContainerAssignment;
using kubelet::DynamicResource;
namespace fs = std::filesystem;

namespace {

struct Logs {
  static std::mutex mu;
  static std::vector<std::string> lines;
  static void sink(log::Level, std::string_view msg) {
    std::lock_guard lock(mu);
    lines.emplace_back(msg);
  }
  Logs() {
    lines.clear();
    log::set_sink(&Logs::sink, log::Level::debug);
  }
  ~Logs() { log::set_sink(nullptr, log::Level::off); }
  std::string all() const {
    std::lock_guard lock(mu);
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};
std::mutex Logs::mu;
std::vector<std::string> Logs::lines;

// A CDI spec for the GPU driver (two devices) and one for the NIC driver.
constexpr const char* kGpuSpec = R"({"cdiVersion": "0.6.0", "kind": "gpu.example.com/gpu", "devices": [
  {"name": "claim-1-gpu0", "containerEdits": {"deviceNodes": [{"path": "/dev/gpu0", "hostPath": "/dev/null"}],
                                               "env": ["GPU0=1"]}},
  {"name": "claim-1-gpu1", "containerEdits": {"deviceNodes": [{"path": "/dev/gpu1", "hostPath": "/dev/null"}]}},
  {"name": "claim-3-gpu2", "containerEdits": {"deviceNodes": [{"path": "/dev/gpu2", "hostPath": "/dev/null"}]}}]})";
constexpr const char* kNicSpec = R"({"cdiVersion": "0.6.0", "kind": "nic.example.com/nic", "devices": [
  {"name": "claim-2-nic0", "containerEdits": {"deviceNodes": [{"path": "/dev/nic0", "hostPath": "/dev/null"}]}}]})";

ClaimResource device(const std::string& driver, const std::string& name, std::vector<std::string> cdi) {
  return {
      .driver_name = driver, .pool_name = "node-1", .device_name = name, .cdi_devices = std::move(cdi), .share_id = {}};
}

// gpus is a claim of two GPUs; nic a claim of the NIC driver.
DynamicResource gpus() {
  return {"gpus",
          "ns",
          {device("gpu.example.com", "gpu-0", {"gpu.example.com/gpu=claim-1-gpu0"}),
           device("gpu.example.com", "gpu-1", {"gpu.example.com/gpu=claim-1-gpu1"})}};
}
DynamicResource nic() {
  return {"net", "ns", {device("nic.example.com", "nic-0", {"nic.example.com/nic=claim-2-nic0"})}};
}

ContainerAssignment claims(std::vector<DynamicResource> d) {
  ContainerAssignment a;
  a.dynamic_resources = std::move(d);
  return a;
}

Json cri_annotations(const std::string& container) {
  return {{"io.kubernetes.cri.container-type", "container"},
          {"io.kubernetes.cri.sandbox-namespace", "ns"},
          {"io.kubernetes.cri.sandbox-name", "pod"},
          {"io.kubernetes.cri.sandbox-uid", "uid-1"},
          {"io.kubernetes.cri.container-name", container}};
}

Json sibling(Json more) {
  Json a = {{device_plugin::kPod, "ns/pod"}};
  a.update(more);
  return a;
}

Spec spec_with(const Json& annotations) {
  Json doc = {{"ociVersion", "1.1.0"},
              {"process", {{"args", {"sh"}}, {"env", {"PATH=/bin"}}}},
              {"mounts", Json::array()},
              {"annotations", annotations},
              {"linux", Json::object()}};
  return Spec::parse(doc.dump(2));
}

std::vector<std::string> device_paths(const Spec& spec) {
  std::vector<std::string> out;
  if (const Json* d = spec.find({"linux", "devices"}))
    for (const auto& e : *d) out.push_back(e["path"]);
  return out;
}

std::string cdi_devices(const Spec& spec) {
  return spec.annotation(device_plugin::kCdiDevices).value_or("");
}

// Node is a kubelet root with the fake kubelet, pod ns/pod, a CDI spec dir,
// and the shim's own chain (device-plugin, cdi) built from config text.
struct Node {
  test::TempDir tmp;
  fs::path root = tmp / "kubelet";
  fs::path cdi_dir = tmp / "cdi";
  test::FakeKubelet kubelet{root};

  Node() {
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
    ctx.kind = kind_of(spec);
    return chain.run(spec, ctx);
  }
};

template <typename Fn>
std::string failure(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return describe(e);
  }
  FAIL("expected an error, none was thrown");
  return {};
}

}  // namespace

TEST_CASE("dra: container-sync hands over both GPUs of a claim and a NIC claim of another driver") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {}}, {"side", {}}});
  node.kubelet.assign("ns", "pod", "main", claims({gpus(), nic()}));
  Logs logs;
  Spec spec = spec_with(sibling({{device_plugin::kDevicesFrom, "main"}}));
  node.run(spec, node.config("enabled = true\n"));
  CHECK(cdi_devices(spec) ==
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
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {}}});
  node.kubelet.assign("ns", "pod", "main", claims({gpus(), nic()}));
  Spec spec = spec_with(sibling({{device_plugin::kDevicesFrom, "main"}}));
  node.run(spec, node.config("enabled = true\ndrivers = [\"nic.example.com\"]\n"));
  CHECK(cdi_devices(spec) == "nic.example.com/nic=claim-2-nic0");
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/nic0"});
}

TEST_CASE("dra: pod-sync takes the claims of every listed container, each name once") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"a", {}}, {"b", {}}, {"c", {}}});
  node.kubelet.assign("ns", "pod", "a", claims({gpus()}));
  node.kubelet.assign("ns", "pod", "b", claims({nic(), gpus()}));  // a claim shared by a and b
  Spec spec = spec_with(sibling({{device_plugin::kDevicesFromPod, "true"}}));
  node.run(spec, node.config("enabled = true\n"));
  CHECK(cdi_devices(spec) ==
        "gpu.example.com/gpu=claim-1-gpu0,gpu.example.com/gpu=claim-1-gpu1,nic.example.com/nic=claim-2-nic0");
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0", "/dev/gpu1", "/dev/nic0"});
}

TEST_CASE("dra: off by default; with device-plugin resources only their devices are handled") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {}}});
  node.kubelet.assign("ns", "pod", "main", claims({gpus()}));
  Spec spec = spec_with(sibling({{device_plugin::kDevicesFrom, "main"}}));
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
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  Spec spec = spec_with(sibling({{device_plugin::kDevicesFrom, "main"}, {device_plugin::kDevicesFromPod, "true"}}));
  Json before = spec.json();
  node.run(spec, node.config("enabled = true\n"));
  CHECK(spec.json() == before);
  CHECK(node.kubelet.calls("Get") == 1);
}

TEST_CASE("dra: a claim naming a CDI device no spec defines fails naming the claim, driver and CDI name") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {}}});
  node.kubelet.assign(
      "ns", "pod", "main",
      claims({gpus(), {"lost", "ns", {device("gpu.example.com", "gpu-7", {"gpu.example.com/gpu=claim-9-gpu7"})}}}));
  Spec spec = spec_with(sibling({{device_plugin::kDevicesFrom, "main"}}));
  Json before = spec.json();
  CHECK_THAT(failure([&] { node.run(spec, node.config("enabled = true\n")); }),
             Contains("cdi: unresolvable CDI devices gpu.example.com/gpu=claim-9-gpu7 (from DRA claim `ns/lost` of "
                      "container `main`, driver `gpu.example.com`, device `node-1/gpu-7`); searched " +
                      node.cdi_dir.string()));

  SECTION("an unknown source container fails naming the pod; so does a malformed CDI name") {
    Spec other = spec_with(sibling({{device_plugin::kDevicesFrom, "mian"}}));
    CHECK_THAT(failure([&] { node.run(other, node.config("enabled = true\n")); }),
               Contains("device-plugin: read the DRA claims of container `mian` (annotation "
                        "specshim.io/devices-from) for container `ctr-1` of pod `ns/pod` (socket " +
                        kubelet::pod_resources_socket(node.root).string() + "): pod `ns/pod` has no container `mian`"));
    node.kubelet.assign("ns", "pod", "main",
                        claims({{"bad", "ns", {device("gpu.example.com", "gpu-8", {"gpu.example.com/gpu=a,b"})}}}));
    Spec bad = spec_with(sibling({{device_plugin::kDevicesFrom, "main"}}));
    CHECK_THAT(failure([&] { node.run(bad, node.config("enabled = true\n")); }),
               Contains("DRA claim `ns/bad` of container `main`, driver `gpu.example.com`, device `node-1/gpu-8`: "
                        "invalid CDI device name `gpu.example.com/gpu=a,b`"));
  }
}

TEST_CASE("dra: a CRI container's own claims are never handed over") {
  Node node;
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
    a[device_plugin::kDevicesFromPod] = "true";
    Spec spec = spec_with(a);
    node.run(spec, node.config("enabled = true\n"));
    CHECK(cdi_devices(spec) == "nic.example.com/nic=claim-2-nic0");
    CHECK(device_paths(spec) == std::vector<std::string>{"/dev/nic0"});
  }
}
