// SPDX-License-Identifier: Apache-2.0
// The cpuset modifier in the shim's real create pipeline (config text, the
// registry's chain, the specshim-kubelet helper) against the fake kubelet,
// which serves cpu_ids and memory NUMA nodes in real PodResources answers.
#include "specshim/modifiers/cpuset.h"

#include <catch2/catch.hpp>
#include <cstdlib>

#include "bundle.h"
#include "error_of.h"
#include "fake_kubelet.h"
#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "tempdir.h"

using namespace specshim;
using Catch::Contains;
using test::described_error;
using test::FakeKubelet;
namespace fs = std::filesystem;

namespace {

kubelet::ContainerAssignment pinned(std::vector<std::int64_t> cpu_ids, std::vector<std::int64_t> numa = {}) {
  kubelet::ContainerAssignment a;
  a.cpu_ids = std::move(cpu_ids);
  if (!numa.empty()) a.memory = {{"memory", 1ULL << 30, numa}, {"hugepages-1Gi", 1ULL << 30, numa}};
  return a;
}

// Node is a kubelet root with a bundle, the helper found through
// $SPECSHIM_KUBELET_HELPER as the shim finds it, and (unless down) the fake
// kubelet serving pod ns/pod: `main` pinned to CPUs 2-3 and node 1, `side`
// to CPU 6 and node 0, `plain` on the shared pool.
struct Node {
  test::TempDir tmp;
  fs::path root = tmp / "kubelet";
  fs::path bundle = tmp / "bundle";
  std::optional<FakeKubelet> kubelet;

  explicit Node(bool up = true) {
    ::setenv("SPECSHIM_KUBELET_HELPER", SPECSHIM_KUBELET_HELPER_BIN, 1);
    fs::create_directories(root);
    if (!up) return;
    kubelet.emplace(root);
    kubelet->add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}, {"side", {}}, {"plain", {}}});
    kubelet->assign("ns", "pod", "main", pinned({3, 2}, {1}));
    kubelet->assign("ns", "pod", "side", pinned({6}, {0}));
  }

  std::string config(const std::string& extra = "") const {
    return "[chain]\norder = [\"cpuset\"]\n[cpuset]\nenabled = true\nkubelet-root = \"" + root.string() + "\"\n" +
           extra;
  }

  // create runs the pipeline on a spec with these annotations and cpu object.
  create::Outcome create(const Json& annotations, const Json& cpu = nullptr, const std::string& extra = "") {
    Json doc = {{"ociVersion", "1.1.0"},
                {"process", {{"args", {"sh"}}}},
                {"annotations", annotations},
                {"linux", {{"resources", {{"memory", {{"limit", 1 << 30}}}}}}}};
    if (!cpu.is_null()) doc["linux"]["resources"]["cpu"] = cpu;
    fs::create_directories(bundle);
    test::write_file(bundle / "config.json", doc.dump(2) + "\n");
    return test::run_pipeline(bundle, config(extra));
  }
};

Json sibling_of(const std::string& container) {
  return {{"specshim.io/pod", "ns/pod"}, {"specshim.io/devices-from", container}};
}

const Json kPodSync = {{"specshim.io/pod", "ns/pod"}, {"specshim.io/devices-from-pod", "true"}};

Json cpu_of(const create::Outcome& out) {
  const Json* cpu = out.spec.find({"linux", "resources", "cpu"});
  return cpu ? *cpu : Json();
}

// Logs collects the debug log.
struct Logs {
  static std::vector<std::string> lines;
  static void sink(log::Level, std::string_view msg) { lines.emplace_back(msg); }
  Logs() {
    lines.clear();
    log::set_sink(&Logs::sink, log::Level::debug);
  }
  ~Logs() { log::set_sink(nullptr, log::Level::off); }
  std::string all() const {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
  }
};
std::vector<std::string> Logs::lines;

}  // namespace

TEST_CASE("cpuset: a container-sync sibling gets its source's exclusive CPUs and NUMA nodes, from one Get") {
  Node node;
  Logs logs;
  auto out = node.create(sibling_of("main"));
  CHECK(cpu_of(out) == Json{{"cpus", "2-3"}, {"mems", "1"}});
  CHECK(out.result.passes == 2);
  CHECK(node.kubelet->calls("Get") == 1);
  CHECK_THAT(logs.all(), Contains("cpuset: container `golden` of pod `ns/pod`: container `main` of pod `ns/pod` "
                                  "holds CPUs \"2-3\", memory on NUMA nodes \"1\"") &&
                             Contains("linux.resources.cpu.cpus = \"2-3\" (container `main` \"2-3\")"));
}

TEST_CASE("cpuset: next to device-plugin on the same kubelet, one helper asks the pod's resources once") {
  Node node;
  kubelet::AllocateResponse gpu;
  gpu.devices = {{"/dev/gpu0", "/dev/null", "rw"}};
  test::write_checkpoint(node.root, {{"uid-1", "main", "example.com/gpu", {{"0", {"GPU-1"}}}, gpu}}, {},
                         test::CheckpointLayout::numa);
  std::string both =
      "[chain]\norder = [\"device-plugin\", \"cpuset\"]\n"
      "[device-plugin]\nenabled = true\nkubelet-root = \"" +
      node.root.string() +
      "\"\n"
      "[[device-plugin.resources]]\nname = \"example.com/gpu\"\nproviders = [\"container-sync\"]\n"
      "[cpuset]\nenabled = true\nkubelet-root = \"" +
      node.root.string() + "\"\n";
  Json doc = {{"ociVersion", "1.1.0"}, {"process", {{"args", {"sh"}}}}, {"annotations", sibling_of("main")}};
  fs::create_directories(node.bundle);
  test::write_file(node.bundle / "config.json", doc.dump(2) + "\n");
  auto out = test::run_pipeline(node.bundle, both);
  const Json* devices = out.spec.find({"linux", "devices"});
  REQUIRE(devices);
  CHECK((*devices)[0]["path"] == "/dev/gpu0");
  CHECK(cpu_of(out) == Json{{"cpus", "2-3"}, {"mems", "1"}});
  CHECK(node.kubelet->calls("Get") == 1);
  // Different budgets are different sessions: each modifier asks for itself.
  fs::remove(node.bundle / "config.json");
  test::write_file(node.bundle / "config.json", doc.dump(2) + "\n");
  auto apart = test::run_pipeline(node.bundle, both + "budget-ms = 1500\n");
  CHECK(cpu_of(apart) == Json{{"cpus", "2-3"}, {"mems", "1"}});
  CHECK(node.kubelet->calls("Get") == 3);
}

TEST_CASE("cpuset: a pod-sync sibling gets the union over the pod's containers") {
  Node node;
  auto out = node.create(kPodSync);
  CHECK(cpu_of(out) == Json{{"cpus", "2-3,6"}, {"mems", "0-1"}});
}

TEST_CASE("cpuset: the List fallback of an older kubelet carries the same CPUs") {
  Node node;
  node.kubelet->unimplement_get();
  auto out = node.create(kPodSync);
  CHECK(cpu_of(out) == Json{{"cpus", "2-3,6"}, {"mems", "0-1"}});
  CHECK(node.kubelet->calls("List") == 1);
}

TEST_CASE("cpuset: a narrower cpuset in the spec is intersected, and no CPU in common fails the create") {
  Node node;
  auto out = node.create(kPodSync, {{"shares", 2048}, {"cpus", "0-3"}, {"mems", "0"}});
  CHECK(cpu_of(out) == Json{{"shares", 2048}, {"cpus", "2-3"}, {"mems", "0"}});

  CHECK(described_error([&] {
          node.create(sibling_of("main"), {{"cpus", "6"}});
        }) ==
        "cpuset: pin container `golden` of pod `ns/pod` to the CPUs of container `main`: "
        "linux.resources.cpu.cpus \"6\" and the kubelet's \"2-3\" have no CPU in common");
}

TEST_CASE("cpuset: a CRI container is the kubelet's: untouched, nobody asked") {
  Node node;
  Json cri = {{"io.kubernetes.cri.container-type", "container"}, {"io.kubernetes.cri.sandbox-namespace", "ns"},
              {"io.kubernetes.cri.sandbox-name", "pod"},         {"io.kubernetes.cri.sandbox-uid", "uid-1"},
              {"io.kubernetes.cri.container-name", "plain"},     {"specshim.io/devices-from", "main"}};
  auto out = node.create(cri);
  CHECK(cpu_of(out).is_null());
  CHECK_FALSE(out.changed());
  CHECK(node.kubelet->calls("Get") + node.kubelet->calls("List") == 0);
}

TEST_CASE("cpuset: a source without exclusive CPUs leaves the spec alone") {
  Node node;
  auto out = node.create(sibling_of("plain"), {{"cpus", "0-1"}});
  CHECK(cpu_of(out) == Json{{"cpus", "0-1"}});
  CHECK_FALSE(out.changed());
  CHECK(node.kubelet->calls("Get") == 1);
}

TEST_CASE("cpuset: kubelet down fails the create naming pod, container and socket, or is skipped") {
  Node node(false);
  std::string socket = kubelet::pod_resources_socket(node.root).string();
  CHECK_THAT(described_error([&] { node.create(sibling_of("main")); }),
             Contains("cpuset: read the CPUs of container `main` (annotation specshim.io/devices-from) for container "
                      "`golden` of pod `ns/pod` (socket " +
                      socket + "): call Get on `" + socket + "`: socket does not exist"));
  Logs logs;
  auto out = node.create(sibling_of("main"), nullptr, "on-error = \"skip\"\n");
  CHECK_FALSE(out.changed());
  CHECK_THAT(logs.all(), Contains("cpuset: skipped (on-error = skip): read the CPUs of container `main`"));
}

TEST_CASE("cpuset: dry-run shows the change") {
  Node node;
  fs::create_directories(node.bundle);
  test::write_file(node.bundle / "config.json", Json{{"ociVersion", "1.1.0"}, {"annotations", kPodSync}}.dump());
  auto out = test::run_pipeline(node.bundle, node.config(), true);
  CHECK(out.spec_changed());
  CHECK(cpu_of(out) == Json{{"cpus", "2-3,6"}, {"mems", "0-1"}});
}
