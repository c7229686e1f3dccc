// SPDX-License-Identifier: Apache-2.0
// specshim doctor's kubelet check: the real binary, through the real
// specshim-kubelet helper, against the in-process fake kubelet and device
// plugins under a fake host root.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>

#include "doctor_host.h"
#include "fake_kubelet.h"
#include "specshim/kubelet/client.h"

namespace fs = std::filesystem;
using namespace specshim;
using namespace specshim::test;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// KubeletHost is a fake host with a fake kubelet at /var/lib/kubelet.
struct KubeletHost : FakeHost {
  fs::path kubelet_root = root / "var/lib/kubelet";
  FakeKubelet kubelet{kubelet_root};

  fs::path plugin(const std::string& name) const { return kubelet::device_plugin_dir(kubelet_root) / name; }
  ProcessResult run(const std::string& device_plugin_table) {
    write_config("[device-plugin]\n" + device_plugin_table);
    return doctor({"--json"}, {{"SPECSHIM_KUBELET_HELPER", SPECSHIM_KUBELET_HELPER_BIN}});
  }
};

json parsed(const ProcessResult& r) {
  INFO(r.out << r.err);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("doctor: a kubelet with two plugins is reported with resources, device counts and the checkpoint") {
  KubeletHost h;
  h.kubelet.set_allocatable({{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}, {"example.com/vfio", {"v0"}}});
  FakeDevicePlugin gpu(h.plugin("nvidia.sock"), {"GPU-a", "GPU-b"});
  FakeDevicePlugin vfio(h.plugin("vfio.sock"), {"v0"});
  write_checkpoint(h.kubelet_root, {{"uid-1", "main", "nvidia.com/gpu", {{"0", {"GPU-a"}}}, std::nullopt}},
                   {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}, {"example.com/vfio", {"v0"}}}, CheckpointLayout::numa);
  auto r = h.run("enabled = true\n");
  json report = parsed(r);
  REQUIRE_THAT(report, HasFinding("kubelet", "info", "helper " + std::string(SPECSHIM_KUBELET_HELPER_BIN)));
  REQUIRE_THAT(report, HasFinding("kubelet", "ok",
                                  "pod-resources/kubelet.sock: GetAllocatableResources: 2 resources, 3 devices"));
  REQUIRE(finding(report, "kubelet", "allocatable `nvidia.com/gpu`: 2 devices")["details"] ==
          json::array({"GPU-a", "GPU-b"}));
  REQUIRE_THAT(report, HasFinding("kubelet", "ok", "pod-resources/kubelet.sock: PodResources Get answers"));
  REQUIRE_THAT(report, HasFinding("kubelet", "ok", h.plugin("nvidia.sock").string() + ": `nvidia.com/gpu`, 2 devices"));
  REQUIRE_THAT(report, HasFinding("kubelet", "ok", h.plugin("vfio.sock").string() + ": `example.com/vfio`, 1 device"));
  REQUIRE_THAT(report,
               HasFinding("kubelet", "ok", "kubelet_internal_checkpoint: 1 allocation, 2 registered resources"));
  REQUIRE(report["problems"] == 0);
  REQUIRE(r.exit_code == 0);
  CHECK(h.kubelet.calls("GetAllocatableResources") == 1);
  CHECK(h.kubelet.calls("Get") == 1);
  CHECK(gpu.calls("ListAndWatch") == 1);
  CHECK(gpu.calls("Allocate") == 0);
}

TEST_CASE("doctor: a kubelet with Get disabled is reported as creates would use it, through List") {
  KubeletHost h;
  h.kubelet.disable_get();
  json report = parsed(h.run("enabled = true\n"));
  REQUIRE_THAT(report, HasFinding("kubelet", "ok", "PodResources Get is disabled here: creates use List"));
  REQUIRE_THAT(report, HasFinding("kubelet", "info", "device-plugins/kubelet_internal_checkpoint: absent"));
  CHECK(h.kubelet.calls("List") == 2);  // Get's fallback, then the listing of pods' assignments
}

TEST_CASE("doctor: a plugin that hangs is cut at budget-ms, failing plugins and checkpoints are named") {
  KubeletHost h;
  FakeDevicePlugin slow(h.plugin("slow.sock"), {"s0"});
  slow.delay(60s);
  FakeDevicePlugin broken(h.plugin("broken.sock"), {"b0"});
  broken.fail(Code::internal, "driver not loaded");
  write_file(kubelet::checkpoint_file(h.kubelet_root), "{\"Data\": ");

  auto started = std::chrono::steady_clock::now();
  auto r = h.run("enabled = true\nbudget-ms = 300\n");
  auto took = std::chrono::steady_clock::now() - started;
  json on = parsed(r);
  std::string slow_call = "call ListAndWatch on `" + h.plugin("slow.sock").string() + "`";
  REQUIRE_THAT(on, HasFinding("kubelet", "fail", slow_call + ": no answer within the budget of 300 ms"));
  REQUIRE_THAT(on, HasFinding("kubelet", "fail", h.plugin("broken.sock").string() + "`: INTERNAL: driver not loaded"));
  REQUIRE_THAT(on, HasFinding("kubelet", "fail", kubelet::checkpoint_file(h.kubelet_root).string()));
  REQUIRE(r.exit_code == 1);
  CHECK(took < 5s);  // every call bounded: 300 ms each, far below the plugin's 60 s

  // With the modifier off the same findings are notes.
  json off = parsed(h.run("budget-ms = 300\n"));
  REQUIRE_THAT(off, HasFinding("kubelet", "info", slow_call));
  REQUIRE_THAT(off, HasFinding("kubelet", "info", "driver not loaded"));
  REQUIRE(off["problems"] == 0);
}

TEST_CASE("doctor: pods' DRA claims, exclusive CPUs and pinned memory are listed per container") {
  KubeletHost h;
  h.kubelet.add_pod("ml", "train-0", "uid-1", {{"main", {}}, {"side", {}}});
  h.kubelet.add_pod("web", "front", "uid-2", {{"app", {}}});
  kubelet::ContainerAssignment main;
  main.dynamic_resources = {{"gpus",
                             "ml",
                             {{.driver_name = "gpu.example.com",
                               .pool_name = "node-1",
                               .device_name = "gpu-0",
                               .cdi_devices = {"gpu.example.com/gpu=c1-gpu0"},
                               .share_id = {}},
                              {.driver_name = "gpu.example.com",
                               .pool_name = "node-1",
                               .device_name = "gpu-1",
                               .cdi_devices = {},
                               .share_id = "s-1"}}}};
  main.cpu_ids = {3, 2, 5};
  main.memory = {{"memory", 1073741824, {0}}};
  h.kubelet.assign("ml", "train-0", "main", main);
  json report = parsed(h.run("enabled = true\n"));
  std::string socket = kubelet::pod_resources_socket(h.kubelet_root).string();
  REQUIRE_THAT(report, HasFinding("kubelet", "ok",
                                  socket + ": PodResources List: 2 pods, 1 with DRA claims, 1 with exclusive CPUs"));
  REQUIRE(finding(report, "kubelet", "PodResources List")["details"] ==
          json::array({"pod `ml/train-0` container `main`: DRA claim `ml/gpus`, driver `gpu.example.com`, device "
                       "node-1/gpu-0, CDI gpu.example.com/gpu=c1-gpu0",
                       "pod `ml/train-0` container `main`: DRA claim `ml/gpus`, driver `gpu.example.com`, device "
                       "node-1/gpu-1 (share s-1), CDI none",
                       "pod `ml/train-0` container `main`: exclusive CPUs 2-3,5",
                       "pod `ml/train-0` container `main`: memory 1073741824 bytes on NUMA nodes 0"}));
  REQUIRE(report["problems"] == 0);

  // The text report lists them only with --verbose.
  h.write_config("[device-plugin]\nenabled = true\n");
  auto env = std::map<std::string, std::string>{{"SPECSHIM_KUBELET_HELPER", SPECSHIM_KUBELET_HELPER_BIN}};
  auto quiet = h.doctor({}, env);
  auto verbose = h.doctor({"--verbose"}, env);
  CHECK_THAT(quiet.out, Catch::Contains("1 with DRA claims") && !Catch::Contains("exclusive CPUs 2-3,5"));
  CHECK_THAT(verbose.out, Catch::Contains("pod `ml/train-0` container `main`: exclusive CPUs 2-3,5"));
}

TEST_CASE("doctor: a kubelet that reports no dynamic_resources for any container gets a note") {
  KubeletHost h;
  h.kubelet.add_pod("ml", "train-0", "uid-1", {{"main", {{"nvidia.com/gpu", {"GPU-a"}}}}});
  json report = parsed(h.run("enabled = true\n[device-plugin.dra]\nenabled = true\n"));
  REQUIRE_THAT(report, HasFinding("kubelet", "info",
                                  "no container has DRA claims (PodResources dynamic_resources): no pod here uses DRA, "
                                  "or the kubelet does not report them (gate KubeletPodResourcesDynamicResources off"));
  REQUIRE(report["problems"] == 0);
}

// Seed 002: ACK's own GPU plugin and HAMi both register nvidia.com/gpu. The
// kubelet talks to the last one that registered (ACK's: its devices are the
// registered ones); HAMi's still answers on its socket, and a pod it served
// before left its split devices in the checkpoint.
TEST_CASE("doctor: two device plugins serving one resource are a warning naming both sockets") {
  KubeletHost h;
  FakeDevicePlugin ack(h.plugin("ack-gpu.sock"), {"GPU-aaa", "GPU-bbb"});
  FakeDevicePlugin hami(h.plugin("hami.sock"), {"GPU-aaa-0", "GPU-aaa-1", "GPU-bbb-0", "GPU-bbb-1"});
  FakeDevicePlugin vfio(h.plugin("vfio.sock"), {"v0"});
  std::string ack_socket = h.plugin("ack-gpu.sock").string(), hami_socket = h.plugin("hami.sock").string();
  std::string warning = "`nvidia.com/gpu` is served by 2 device plugins: " + ack_socket + ", " + hami_socket +
                        "; the kubelet calls only the one that registered last";

  SECTION("known from the checkpoint's allocations") {
    h.kubelet.set_allocatable({{"nvidia.com/gpu", {"GPU-aaa", "GPU-bbb"}}, {"example.com/vfio", {"v0"}}});
    write_checkpoint(h.kubelet_root, {{"uid-old", "main", "nvidia.com/gpu", {{"0", {"GPU-aaa-0"}}}, std::nullopt}},
                     {{"nvidia.com/gpu", {"GPU-aaa", "GPU-bbb"}}, {"example.com/vfio", {"v0"}}},
                     CheckpointLayout::numa);
    auto r = h.run("enabled = true\n");
    json report = parsed(r);
    REQUIRE_THAT(report, HasFinding("kubelet", "ok", ack_socket + ": `nvidia.com/gpu`, 2 devices"));
    REQUIRE_THAT(report, HasFinding("kubelet", "ok", hami_socket + ": `nvidia.com/gpu`, 4 devices"));
    REQUIRE_THAT(report, HasFinding("kubelet", "warn", warning));
    json w = finding(report, "kubelet", "is served by");
    CHECK_THAT(w["text"].get<std::string>(),
               Catch::Contains("HAMi's CUDA_DEVICE_MEMORY_LIMIT_<i> and CUDA_DEVICE_SM_LIMIT") &&
                   Catch::Contains("run one plugin per resource") && Catch::Contains("require-env"));
    CHECK(w["details"] ==
          json::array({ack_socket + ": 2 devices registered as `nvidia.com/gpu` in the checkpoint, 2 devices "
                                    "allocatable as `nvidia.com/gpu` (GetAllocatableResources)",
                       hami_socket + ": 1 device allocated as `nvidia.com/gpu` in the checkpoint"}));
    auto lines = findings(report, "kubelet");
    CHECK(std::count_if(lines.begin(), lines.end(), [](auto& f) { return f.starts_with("warn "); }) == 1);
    REQUIRE(report["problems"] == 0);
    REQUIRE(r.exit_code == 0);
    CHECK(ack.calls("Allocate") == 0);
    CHECK(hami.calls("Allocate") == 0);
  }

  SECTION("known from the socket the config names, the guard already set") {
    write_checkpoint(h.kubelet_root, {}, {{"nvidia.com/gpu", {"GPU-aaa", "GPU-bbb"}}}, CheckpointLayout::numa);
    json report =
        parsed(h.run("enabled = true\n[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\nsocket = \"hami.sock\"\n"
                     "providers = [\"kubelet\"]\nrequire-env = [\"CUDA_DEVICE_MEMORY_LIMIT_*\"]\n"));
    REQUIRE_THAT(report, HasFinding("kubelet", "warn", warning));
    json w = finding(report, "kubelet", "is served by");
    CHECK_THAT(
        w["text"].get<std::string>(),
        Catch::EndsWith("require-env (`CUDA_DEVICE_MEMORY_LIMIT_*`) makes a create whose answer lacks them fail"));
    CHECK(w["details"][1] == hami_socket + ": its socket in [[device-plugin.resources]] `nvidia.com/gpu`");
  }
}

TEST_CASE("doctor: one plugin per resource is no warning, and devices known as two resources are not guessed") {
  KubeletHost h;
  FakeDevicePlugin gpu(h.plugin("nvidia.sock"), {"GPU-a", "GPU-b"});
  FakeDevicePlugin a(h.plugin("a.sock"), {"0", "1"});
  FakeDevicePlugin b(h.plugin("b.sock"), {"0", "1"});
  // a.example.com/dev and b.example.com/dev both number their devices 0 and 1.
  write_checkpoint(
      h.kubelet_root, {},
      {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}, {"a.example.com/dev", {"0", "1"}}, {"b.example.com/dev", {"0", "1"}}},
      CheckpointLayout::numa);
  auto r = h.run("enabled = true\n");
  json report = parsed(r);
  REQUIRE_THAT(report, HasFinding("kubelet", "ok", h.plugin("nvidia.sock").string() + ": `nvidia.com/gpu`, 2 devices"));
  REQUIRE_THAT(report, HasFinding("kubelet", "ok",
                                  h.plugin("a.sock").string() +
                                      ": resource unclear (its devices are known as `a.example.com/dev`, "
                                      "`b.example.com/dev`), 2 devices"));
  CHECK(finding(report, "kubelet", "is served by").is_null());
  CHECK(report["problems"] == 0);
  CHECK(r.exit_code == 0);
}
