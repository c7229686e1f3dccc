// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier in a real chain against the fake kubelet, fake
// device plugins and a checkpoint file (in-process gRPC client, or the helper):
// sync modes, direct and chained requests, failing and slow plugins, dry-run.
// Device answers name /dev/null on the host, so no node has to be created.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "device_plugin/modifier.h"
#include "device_plugin_support.h"
#include "error_of.h"
#include "fake_kubelet.h"
#include "raw_socket_server.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/chain.h"
#include "specshim/modifiers/device_plugin.h"
#include "tempdir.h"

using namespace specshim;
using namespace specshim::device_plugin;
using namespace std::chrono_literals;
using Catch::Contains;
using kubelet::AllocateResponse;
using test::annotation;
using test::cri_annotations;
using test::device_paths;
using test::FakeDevicePlugin;
using test::FakeKubelet;
using test::Logs;
using test::sibling;
using test::spec_with;
namespace fs = std::filesystem;

namespace {

// Deadline tests allow this much over the budget (a loaded 2-core machine),
// far below the fakes' delays.
constexpr auto kMargin = 400ms;

AllocateResponse device_answer(const std::string& container_path, const std::string& env) {
  AllocateResponse a;
  a.envs = {{"VISIBLE", env}};
  a.devices = {{container_path, "/dev/null", "rw"}};
  a.mounts = {{"/opt/" + env, "/tmp", true}};
  return a;
}

AllocateResponse naming(const std::string& resource, const std::string& ids_json) {
  AllocateResponse a;
  a.annotations = {{resource, ids_json}};
  return a;
}

// Node is a kubelet root with the fake kubelet serving pod ns/pod (uid-1).
struct Node {
  test::TempDir tmp;
  fs::path root = tmp.path();
  FakeKubelet kubelet{root};
  int clients = 0;

  fs::path socket(const std::string& name) const { return kubelet::device_plugin_dir(root) / name; }

  std::string config(const std::string& resources, const std::string& extra = "") const {
    return "[device-plugin]\nenabled = true\nkubelet-root = \"" + root.string() + "\"\n" + extra + resources;
  }

  // modifier builds the modifier from TOML text, with the in-process gRPC
  // client (counted in clients) unless given another.
  std::unique_ptr<DevicePlugin> modifier(const std::string& toml, ClientFactory make_client = {}) {
    auto doc = config::Document::parse(toml, "test.toml");
    auto top = doc.root();
    auto section = top.section("device-plugin");
    auto c = read_config(section);
    section.finish();
    REQUIRE(c);
    if (!make_client)
      make_client = [this] {
        ++clients;
        return kubelet::make_grpc_client({root});
      };
    return std::make_unique<DevicePlugin>(*c, std::move(make_client));
  }
};

std::string resource(const std::string& name, const std::string& providers, const std::string& more = "") {
  return "[[device-plugin.resources]]\nname = \"" + name + "\"\nproviders = " + providers + "\n" + more;
}

// Run runs one create's chain around one modifier object.
struct Run {
  DevicePlugin* modifier = nullptr;
  Chain chain;
  Context ctx;

  Run(std::unique_ptr<DevicePlugin> m, bool allow_allocate = true, int max_passes = 8)
      : modifier(m.get()), chain(one(std::move(m)), max_passes) {
    ctx.container_id = "ctr-1";
    ctx.allow_allocate = allow_allocate;
    ctx.dry_run = !allow_allocate;
  }
  static std::vector<std::unique_ptr<Modifier>> one(std::unique_ptr<DevicePlugin> m) {
    std::vector<std::unique_ptr<Modifier>> v;
    v.push_back(std::move(m));
    return v;
  }
  ChainResult operator()(Spec& spec) {
    ctx.kind = pod_identity::kind_of(spec);
    return chain.run(spec, ctx);
  }
};

template <typename Fn>
std::chrono::milliseconds timed(Fn&& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

}  // namespace

TEST_CASE("kubelet: the container's own allocation comes from the checkpoint, with no Allocate call") {
  Node node;
  FakeDevicePlugin plugin(node.socket("gpu.sock"), {"GPU-1"});
  plugin.respond(device_answer("/dev/wrong", "from-allocate"));
  test::write_checkpoint(
      node.root, {{"uid-1", "main", "example.com/gpu", {{"0", {"GPU-1"}}}, device_answer("/dev/gpu0", "GPU-1")}}, {},
      test::CheckpointLayout::numa);
  Run run(node.modifier(
      node.config(resource("example.com/gpu", "[\"kubelet\"]", "socket = \"gpu.sock\"\nallocate = true\n"))));
  Spec spec = spec_with(cri_annotations());
  auto result = run(spec);
  CHECK(result.passes == 2);
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
  CHECK(spec.json()["linux"]["resources"]["devices"][0]["access"] == "rw");
  CHECK(spec.json()["process"]["env"] == Json{"PATH=/bin", "VISIBLE=GPU-1"});
  CHECK(spec.json()["mounts"][0]["destination"] == "/opt/GPU-1");
  CHECK(annotation(spec, kResources) == "example.com/gpu");
  CHECK(plugin.calls("Allocate") == 0);
  CHECK(node.kubelet.calls("Get") == 0);  // the checkpoint answered: no RPC at all
}

TEST_CASE("kubelet: without a pod UID the kubelet is asked, and the checkpoint still answers") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  FakeDevicePlugin plugin(node.socket("gpu.sock"), {"GPU-1"});
  test::write_checkpoint(
      node.root, {{"uid-1", "main", "example.com/gpu", {{"0", {"GPU-1"}}}, device_answer("/dev/gpu0", "GPU-1")}}, {},
      test::CheckpointLayout::flat);
  Run run(node.modifier(
      node.config(resource("example.com/gpu", "[\"kubelet\"]", "socket = \"gpu.sock\"\nallocate = true\n"))));
  Json a = cri_annotations();
  a.erase("io.kubernetes.cri.sandbox-uid");  // containerd < 1.6.11
  Spec spec = spec_with(a);
  run(spec);
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
  CHECK(node.kubelet.calls("Get") == 1);
  CHECK(plugin.calls("Allocate") == 0);
}

TEST_CASE("container-sync: a sibling outside CRI gets the devices of the pod's main container") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1", "GPU-2"}}}}, {"side", {}}});
  test::write_checkpoint(
      node.root,
      {{"uid-1", "main", "example.com/gpu", {{"0", {"GPU-2"}}, {"1", {"GPU-1"}}}, device_answer("/dev/gpu0", "main")},
       {"uid-old", "main", "example.com/gpu", {{"0", {"GPU-1"}}}, device_answer("/dev/stale", "old")}},
      {}, test::CheckpointLayout::numa);
  Run run(node.modifier(node.config(resource("example.com/gpu", "[\"container-sync\"]"))));
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  run(spec);
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
  CHECK(annotation(spec, kResources) == "example.com/gpu");
  CHECK(node.clients == 1);
}

TEST_CASE("require-env: a sibling's Allocate answer without the key fails whatever on-error and merges with it") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"nvidia.com/gpu", {"GPU-1"}}}}});
  FakeDevicePlugin plugin(node.socket("gpu.sock"), {"GPU-1"});
  std::string table = resource("nvidia.com/gpu", "[\"container-sync\"]",
                               "socket = \"gpu.sock\"\nallocate = true\non-error = \"skip\"\n"
                               "require-env = [\"CUDA_DEVICE_MEMORY_LIMIT_*\"]\n");
  plugin.respond(device_answer("/dev/gpu0", "GPU-1"));
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  Json before = spec.json();
  Run lacking(node.modifier(node.config(table)));
  CHECK_THAT(test::described_error([&] { lacking(spec); }),
             Contains("device-plugin: `nvidia.com/gpu` GPU-1 for container `ctr-1` of pod `ns/pod`: the answer from "
                      "Allocate (container-sync) has no env `CUDA_DEVICE_MEMORY_LIMIT_*` (require-env of "
                      "`nvidia.com/gpu`; the answer sets VISIBLE)"));
  CHECK(spec.json() == before);

  AllocateResponse hami = device_answer("/dev/gpu0", "GPU-1");
  hami.envs["CUDA_DEVICE_MEMORY_LIMIT_0"] = "20000m";
  plugin.respond(hami);
  Run with(node.modifier(node.config(table)));
  with(spec);
  CHECK(spec.json()["process"]["env"] == Json{"PATH=/bin", "CUDA_DEVICE_MEMORY_LIMIT_0=20000m", "VISIBLE=GPU-1"});
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
}

TEST_CASE("container-sync: an unknown container fails naming the pod, or is skipped") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  Spec spec = spec_with(sibling({{kDevicesFrom, "mian"}}));
  Run fail(node.modifier(node.config(resource("example.com/gpu", "[\"container-sync\"]"))));
  CHECK_THAT(
      test::described_error([&] { fail(spec); }),
      Contains("read the devices of container `mian` (annotation specshim.io/devices-from) for container `ctr-1` "
               "of pod `ns/pod` (socket " +
               kubelet::pod_resources_socket(node.root).string() +
               "): pod `ns/pod` has no container `mian` with devices"));
  Logs logs;
  Run skip(node.modifier(node.config(resource("example.com/gpu", "[\"container-sync\"]", "on-error = \"skip\"\n"))));
  Spec same = spec_with(sibling({{kDevicesFrom, "mian"}}));
  Json before = same.json();
  skip(same);
  CHECK(same.json() == before);
  CHECK_THAT(logs.all(), Contains("skipped (on-error = skip): read the devices of container `mian`"));
}

TEST_CASE("pod-sync: all containers' devices, one Allocate for the whole set when allowed") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1",
                       {{"a", {{"example.com/gpu", {"GPU-1"}}}}, {"b", {{"example.com/gpu", {"GPU-2"}}}}, {"c", {}}});
  FakeDevicePlugin plugin(node.socket("gpu.sock"), {"GPU-1", "GPU-2"});
  plugin.respond(device_answer("/dev/both", "GPU-1,GPU-2"));
  test::write_checkpoint(node.root,
                         {{"uid-1", "a", "example.com/gpu", {{"0", {"GPU-1"}}}, device_answer("/dev/gpu-a", "GPU-1")},
                          {"uid-1", "b", "example.com/gpu", {{"0", {"GPU-2"}}}, device_answer("/dev/gpu-b", "GPU-2")}},
                         {}, test::CheckpointLayout::numa);
  std::string common = "socket = \"gpu.sock\"\n";

  SECTION("allocate = true: one coherent answer") {
    Run run(node.modifier(node.config(resource("example.com/gpu", "[\"pod-sync\"]", common + "allocate = true\n"))));
    Spec spec = spec_with(sibling({{kDevicesFromPod, "true"}}));
    run(spec);
    CHECK(device_paths(spec) == std::vector<std::string>{"/dev/both"});
    CHECK(plugin.allocations() == std::vector<std::vector<std::string>>{{"GPU-1", "GPU-2"}});
  }
  SECTION("allocate = false: each container's stored answer; the first env value wins") {
    Run run(node.modifier(node.config(resource("example.com/gpu", "[\"pod-sync\"]", common))));
    Spec spec = spec_with(sibling({{kDevicesFromPod, "true"}}));
    run(spec);
    CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu-a", "/dev/gpu-b"});
    CHECK(spec.json()["process"]["env"] == Json{"PATH=/bin", "VISIBLE=GPU-1"});
    CHECK(plugin.calls("Allocate") == 0);
  }
}

TEST_CASE("pod-sync: a container's own answer merged for the set fails as itself, require-env whatever on-error") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1",
                       {{"a", {{"example.com/gpu", {"GPU-1"}}}}, {"b", {{"example.com/gpu", {"GPU-2"}}}}});
  AllocateResponse bad = device_answer("gpu-b", "GPU-2");  // a relative container path
  test::write_checkpoint(node.root,
                         {{"uid-1", "a", "example.com/gpu", {{"0", {"GPU-1"}}}, device_answer("/dev/gpu-a", "GPU-1")},
                          {"uid-1", "b", "example.com/gpu", {{"0", {"GPU-2"}}}, bad}},
                         {}, test::CheckpointLayout::numa);
  Spec spec = spec_with(sibling({{kDevicesFromPod, "true"}}));
  Json before = spec.json();

  SECTION("on-error = fail: the part's message, not wrapped in the set's") {
    Run run(node.modifier(node.config(resource("example.com/gpu", "[\"pod-sync\"]"))));
    std::string error = test::described_error([&] { run(spec); });
    CHECK_THAT(error, Contains("resolve `example.com/gpu` GPU-2 for container `ctr-1` of pod `ns/pod`"));
    CHECK_THAT(error, !Contains("GPU-1,GPU-2"));
  }
  SECTION("on-error = skip: a part without a require-env key still fails the create") {
    Run run(node.modifier(node.config(resource("example.com/gpu", "[\"pod-sync\"]",
                                               "on-error = \"skip\"\nrequire-env = [\"VISIBLE\", \"LIMIT_*\"]\n"))));
    CHECK_THAT(test::described_error([&] { run(spec); }),
               Contains("`example.com/gpu` GPU-1 for container `ctr-1` of pod `ns/pod`: the answer from the checkpoint "
                        "(pod-sync) has no env `LIMIT_*`"));
    CHECK(spec.json() == before);
  }
}

TEST_CASE("direct: an annotation naming devices the pod holds is allocated once") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  FakeDevicePlugin plugin(node.socket("gpu.sock"), {"GPU-1"});
  plugin.respond(device_answer("/dev/gpu0", "GPU-1"));
  Run run(node.modifier(node.config(resource("example.com/gpu", "[\"direct\"]", "allocate = true\n"))));
  Spec spec = spec_with(sibling({{"example.com/gpu", R"(["GPU-1"])"}}));
  run(spec);
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
  CHECK(plugin.allocations() == std::vector<std::vector<std::string>>{{"GPU-1"}});  // socket discovered, one call
}

TEST_CASE("direct: devices the pod does not hold are refused unless the restriction is off") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  node.kubelet.add_pod("ns", "victim", "uid-2", {{"main", {{"example.com/gpu", {"GPU-9"}}}}});
  FakeDevicePlugin plugin(node.socket("gpu.sock"), {"GPU-1", "GPU-9"});
  plugin.respond(device_answer("/dev/gpu9", "GPU-9"));
  std::string res = resource("example.com/gpu", "[\"direct\"]", "socket = \"gpu.sock\"\nallocate = true\n");
  Json a = cri_annotations();
  a["example.com/gpu"] = R"(["GPU-1","GPU-9"])";

  Run restricted(node.modifier(node.config(res)));
  Spec spec = spec_with(a);
  CHECK_THAT(test::described_error([&] { restricted(spec); }),
             Contains("resolve annotation `example.com/gpu` for container `main` of pod `ns/pod`") &&
                 Contains("names devices GPU-9 that pod `ns/pod` does not hold (direct-requires-pod-devices = true)"));
  CHECK(plugin.calls("Allocate") == 0);

  Run open(node.modifier(node.config(res, "direct-requires-pod-devices = false\n")));
  Spec spec2 = spec_with(a);
  open(spec2);
  CHECK(device_paths(spec2) == std::vector<std::string>{"/dev/gpu9"});
}

TEST_CASE("spot → real: the spot plugin's annotation is allocated from the real plugin in the next pass") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"spot.example.com/gpu", {"GPU-x-spot"}}}}});
  FakeDevicePlugin spot(node.socket("spot.sock"), {"GPU-x-spot"});
  spot.respond(naming("example.com/gpu", R"(["GPU-x"])"));
  FakeDevicePlugin real(node.socket("gpu.sock"), {"GPU-x"});
  real.respond(device_answer("/dev/gpu0", "GPU-x"));
  std::string toml = node.config(
      resource("spot.example.com/gpu", "[\"container-sync\"]", "socket = \"spot.sock\"\nallocate = true\n") +
      resource("example.com/gpu", "[\"direct\"]", "socket = \"gpu.sock\"\nallocate = true\n"));
  Run run(node.modifier(toml));
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  auto result = run(spec);
  // pass 1: spot answers with the annotation; pass 2: the real GPU; pass 3: nothing left.
  CHECK(result.passes == 3);
  CHECK(spot.allocations() == std::vector<std::vector<std::string>>{{"GPU-x-spot"}});
  CHECK(real.allocations() == std::vector<std::vector<std::string>>{{"GPU-x"}});
  CHECK(annotation(spec, "example.com/gpu") == R"(["GPU-x"])");
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
  CHECK(annotation(spec, kResources) == "spot.example.com/gpu,example.com/gpu");

  SECTION("a chain longer than max-passes names the link still being merged") {
    Run short_run(node.modifier(toml), true, 2);
    Spec again = spec_with(sibling({{kDevicesFrom, "main"}}));
    CHECK_THAT(
        test::described_error([&] { short_run(again); }),
        Contains("spec did not converge after 2 passes; still changing it: device-plugin (merged `example.com/gpu` "
                 "GPU-x from Allocate (direct, named by the answer for `spot.example.com/gpu` GPU-x-spot))"));
  }
}

TEST_CASE("spot → real through the kubelet provider: the checkpoint's answer chains without any spot Allocate") {
  Node node;
  FakeDevicePlugin spot(node.socket("spot.sock"), {"GPU-x-spot"});
  FakeDevicePlugin real(node.socket("gpu.sock"), {"GPU-x"});
  real.respond(device_answer("/dev/gpu0", "GPU-x"));
  test::write_checkpoint(
      node.root,
      {{"uid-1", "main", "spot.example.com/gpu", {{"0", {"GPU-x-spot"}}}, naming("example.com/gpu", R"(["GPU-x"])")}},
      {}, test::CheckpointLayout::numa);
  Run run(node.modifier(
      node.config(resource("spot.example.com/gpu", "[\"kubelet\"]", "socket = \"spot.sock\"\nallocate = true\n") +
                  resource("example.com/gpu", "[\"direct\"]", "socket = \"gpu.sock\"\nallocate = true\n"))));
  Spec spec = spec_with(cri_annotations());
  run(spec);
  CHECK(spot.calls("Allocate") == 0);
  CHECK(real.allocations() == std::vector<std::vector<std::string>>{{"GPU-x"}});
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
  CHECK(node.kubelet.calls("Get") == 0);  // a plugin's answer is trusted without asking what the pod holds
}

TEST_CASE("a reference cycle fails naming every resource on it") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"a.example.com/dev", {"a0"}}}}});
  FakeDevicePlugin a(node.socket("a.sock"), {"a0", "a1"});
  a.respond(naming("b.example.com/dev", R"(["b1"])"));
  FakeDevicePlugin b(node.socket("b.sock"), {"b1"});
  b.respond(naming("a.example.com/dev", R"(["a1"])"));
  Run run(node.modifier(node.config(
      resource("a.example.com/dev", "[\"container-sync\", \"direct\"]", "socket = \"a.sock\"\nallocate = true\n") +
      resource("b.example.com/dev", "[\"direct\"]", "socket = \"b.sock\"\nallocate = true\n"))));
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  CHECK_THAT(
      test::described_error([&] { run(spec); }),
      Contains("device-plugin: resolve `a.example.com/dev` a1 for container `ctr-1` of pod `ns/pod` (socket " +
               node.socket("a.sock").string() +
               "): reference cycle, the chain cannot converge: `a.example.com/dev` a0 → `b.example.com/dev` b1 → "
               "`a.example.com/dev` a1"));
  CHECK(a.calls("Allocate") == 1);
  CHECK(b.calls("Allocate") == 1);
}

TEST_CASE("plugin down: fail names pod, container, resource, socket and cause, skip continues with a warning") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  std::string down = "socket = \"gone.sock\"\nallocate = true\n";
  Spec spec = spec_with(sibling({{"example.com/gpu", R"(["GPU-1"])"}}));

  Run fail(node.modifier(node.config(resource("example.com/gpu", "[\"direct\"]", down))));
  std::string socket = node.socket("gone.sock").string();
  CHECK_THAT(test::described_error([&] { fail(spec); }),
             Contains("device-plugin: resolve `example.com/gpu` GPU-1 for container `ctr-1` of pod `ns/pod` (socket " +
                      socket + "): device plugin for `example.com/gpu`: socket `" + socket +
                      "` does not exist (is the plugin running?)"));

  Logs logs;
  Run skip(node.modifier(node.config(resource("example.com/gpu", "[\"direct\"]", down + "on-error = \"skip\"\n"))));
  Spec same = spec_with(sibling({{"example.com/gpu", R"(["GPU-1"])"}}));
  Json before = same.json();
  CHECK(skip(same).passes == 1);
  CHECK(same.json() == before);
  CHECK_THAT(logs.all(), Contains("skipped (on-error = skip): resolve `example.com/gpu` GPU-1") &&
                             Contains("does not exist (is the plugin running?)"));
}

TEST_CASE("a plugin that accepts and never answers, through the shim's helper: the policy decides, in bounded time") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  test::RawSocketServer hung(node.socket("hung.sock"), test::RawMode::silent);
  std::string policy = GENERATE(as<std::string>{}, "fail", "skip");
  std::string opts = "socket = \"hung.sock\"\nallocate = true\non-error = \"" + policy + "\"\n";
  Run run(node.modifier(node.config(resource("example.com/gpu", "[\"direct\"]", opts), "budget-ms = 300\n"),
                        [&] { return kubelet::make_helper_client({node.root}, SPECSHIM_KUBELET_HELPER_BIN); }));
  Spec spec = spec_with(sibling({{"example.com/gpu", R"(["GPU-1"])"}}));
  Json before = spec.json();
  std::string socket = hung.socket().string();
  std::string what = "resolve `example.com/gpu` GPU-1 for container `ctr-1` of pod `ns/pod` (socket " + socket +
                     "): call Allocate on `" + socket + "`: ";
  auto cause = Contains("within the budget of 300 ms");
  Logs logs;
  auto elapsed = timed([&] {
    if (policy == "fail") {
      CHECK_THAT(test::described_error([&] { run(spec); }), Contains("device-plugin: " + what) && cause);
    } else {
      CHECK(run(spec).passes == 1);
      CHECK(spec.json() == before);
      CHECK_THAT(logs.all(), Contains("device-plugin: skipped (on-error = skip): " + what) && cause);
    }
  });
  CHECK(elapsed < 300ms + kMargin);
}

TEST_CASE("a failed PodResources answer is not asked again in later passes") {
  Node node;
  FakeDevicePlugin plugin(node.socket("gpu.sock"), {"GPU-1"});
  plugin.respond(device_answer("/dev/gpu0", "GPU-1"));
  Logs logs;
  Run run(node.modifier(
      node.config(resource("spot.example.com/gpu", "[\"container-sync\"]", "on-error = \"skip\"\n") +
                      resource("example.com/gpu", "[\"direct\"]", "socket = \"gpu.sock\"\nallocate = true\n"),
                  "direct-requires-pod-devices = false\n")));
  Spec spec = spec_with({{kPod, "ns/ghost"}, {kDevicesFrom, "main"}, {"example.com/gpu", R"(["GPU-1"])"}});
  CHECK(run(spec).passes == 2);  // the direct request changed pass 1
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
  CHECK(node.kubelet.calls("Get") == 1);
  CHECK_THAT(logs.all(), Contains("pod ghost in namespace ns not found"));
}

TEST_CASE("a slow plugin costs the create its budget, not the plugin's delay") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1",
                       {{"main", {{"a.example.com/dev", {"a0"}}, {"b.example.com/dev", {"b0"}}}}});
  FakeDevicePlugin a(node.socket("a.sock"), {"a0"});
  FakeDevicePlugin b(node.socket("b.sock"), {"b0"});
  a.delay(30s);
  b.delay(30s);
  std::string policy = GENERATE(as<std::string>{}, "fail", "skip");
  std::string opts = "allocate = true\non-error = \"" + policy + "\"\n";
  Run run(node.modifier(
      node.config(resource("a.example.com/dev", "[\"container-sync\"]", "socket = \"a.sock\"\n" + opts) +
                      resource("b.example.com/dev", "[\"container-sync\"]", "socket = \"b.sock\"\n" + opts),
                  "budget-ms = 300\n")));
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  auto elapsed = timed([&] {
    if (policy == "fail")
      CHECK_THAT(test::described_error([&] { run(spec); }),
                 Contains("call Allocate on `" + node.socket("a.sock").string()));
    else
      run(spec);  // both plugins skipped, within one budget
  });
  CHECK(elapsed >= 290ms);
  CHECK(elapsed < 300ms + kMargin);
}

TEST_CASE("sandbox containers are left alone, without asking anyone") {
  Node node;
  Run run(node.modifier(node.config(resource("example.com/gpu", "[\"kubelet\", \"direct\"]"))));
  Json a = cri_annotations();
  a["io.kubernetes.cri.container-type"] = "sandbox";
  a["example.com/gpu"] = R"(["GPU-1"])";
  Spec spec = spec_with(a);
  Json before = spec.json();
  run(spec);
  CHECK(spec.json() == before);
  CHECK(node.clients == 0);
}

TEST_CASE("nothing requested: no client for containers outside CRI, no helper process for CRI ones") {
  Node node;
  test::write_checkpoint(node.root,
                         {{"uid-other", "main", "example.com/gpu", {{"0", {"GPU-1"}}}, device_answer("/dev/x", "x")}},
                         {}, test::CheckpointLayout::numa);
  std::string toml =
      node.config(resource("example.com/gpu", "[\"kubelet\", \"container-sync\", \"pod-sync\", \"direct\"]"));
  {
    Run run(node.modifier(toml));
    Spec spec = spec_with(sibling(Json::object()));
    run(spec);
    CHECK_FALSE(run.modifier->client_made());
  }
  // The shim's own client, with a helper that cannot start: the checkpoint says
  // this container holds nothing, so no RPC (and no helper) is needed.
  auto m = node.modifier(toml, [&] { return kubelet::make_helper_client({node.root}, "/nonexistent/helper"); });
  auto* raw = m.get();
  Run run(std::move(m));
  Spec spec = spec_with(cri_annotations());
  Json before = spec.json();
  run(spec);
  CHECK(raw->client_made());
  CHECK(spec.json() == before);
}

TEST_CASE("repeated passes and a second create on the output add nothing twice") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"spot.example.com/gpu", {"GPU-x-spot"}}}}});
  FakeDevicePlugin real(node.socket("gpu.sock"), {"GPU-x"});
  AllocateResponse full = device_answer("/dev/gpu0", "GPU-x");
  full.cdi_devices = {"example.com/gpu=GPU-x"};
  real.respond(full);
  test::write_checkpoint(
      node.root,
      {{"uid-1", "main", "spot.example.com/gpu", {{"0", {"GPU-x-spot"}}}, naming("example.com/gpu", R"(["GPU-x"])")}},
      {}, test::CheckpointLayout::numa);
  std::string toml =
      node.config(resource("spot.example.com/gpu", "[\"kubelet\"]") +
                  resource("example.com/gpu", "[\"direct\"]", "socket = \"gpu.sock\"\nallocate = true\n"));
  auto m = node.modifier(toml);
  DevicePlugin& modifier = *m;
  Run run(std::move(m));
  Spec spec = spec_with(cri_annotations());
  run(spec);
  Json once = spec.json();
  for (int i = 0; i < 3; ++i) modifier.apply(spec, run.ctx);
  CHECK(spec.json() == once);
  CHECK(real.calls("Allocate") == 1);
  CHECK(annotation(spec, kCdiDevices) == "example.com/gpu=GPU-x");

  Run second(node.modifier(toml));
  CHECK(second(spec).passes == 1);
  CHECK(spec.json() == once);
}

TEST_CASE("dry-run reads the checkpoint and PodResources but calls Allocate only with --allow-allocate") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  FakeDevicePlugin plugin(node.socket("gpu.sock"), {"GPU-1"});
  plugin.respond(device_answer("/dev/gpu0", "GPU-1"));
  std::string toml =
      node.config(resource("example.com/gpu", "[\"container-sync\"]", "socket = \"gpu.sock\"\nallocate = true\n"));
  Logs logs;
  Run dry(node.modifier(toml), false);
  Spec spec = spec_with(sibling({{kDevicesFrom, "main"}}));
  Json before = spec.json();
  dry(spec);
  CHECK(spec.json() == before);
  CHECK(plugin.calls("Allocate") == 0);
  CHECK(node.kubelet.calls("Get") == 1);
  CHECK_THAT(logs.all(), Contains("dry-run: would call Allocate for `example.com/gpu` GPU-1"));

  Run allowed(node.modifier(toml), true);
  allowed.ctx.dry_run = true;
  allowed(spec);
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
  CHECK(plugin.calls("Allocate") == 1);
}

TEST_CASE("the shim's helper client resolves a direct request end to end") {
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid-1", {{"main", {{"example.com/gpu", {"GPU-1"}}}}});
  FakeDevicePlugin plugin(node.socket("gpu.sock"), {"GPU-1"});
  plugin.respond(device_answer("/dev/gpu0", "GPU-1"));
  Run run(node.modifier(node.config(resource("example.com/gpu", "[\"direct\"]", "allocate = true\n")),
                        [&] { return kubelet::make_helper_client({node.root}, SPECSHIM_KUBELET_HELPER_BIN); }));
  Spec spec = spec_with(sibling({{"example.com/gpu", R"(["GPU-1"])"}}));
  run(spec);
  CHECK(device_paths(spec) == std::vector<std::string>{"/dev/gpu0"});
  CHECK(plugin.calls("Allocate") == 1);
}
