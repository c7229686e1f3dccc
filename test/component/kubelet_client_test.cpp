// SPDX-License-Identifier: Apache-2.0
// kubelet-client against the fake kubelet and device plugins on temporary
// unix sockets, through both implementations: the in-process gRPC client and
// the HelperClient that runs the specshim-kubelet helper.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "error_of.h"
#include "fake_kubelet.h"
#include "specshim/kubelet/client.h"
#include "tempdir.h"

using namespace specshim;
using namespace std::chrono_literals;
using kubelet::AllocateResponse;
using kubelet::Budget;
using test::error_of;
using test::FakeDevicePlugin;
using test::FakeKubelet;
namespace fs = std::filesystem;

namespace {

// Deadline tests allow this much over the budget: process start-up and a
// loaded CI machine, but far below the fakes' 30 s delays.
constexpr auto kMargin = 400ms;

std::unique_ptr<kubelet::KubeletClient> make_client(const std::string& kind, const fs::path& root) {
  kubelet::ClientOptions options{root};
  if (kind == "grpc") return kubelet::make_grpc_client(options);
  return kubelet::make_helper_client(options, SPECSHIM_KUBELET_HELPER_BIN);
}

std::string implementation() {
  return GENERATE(as<std::string>{}, "grpc", "helper");
}

AllocateResponse gpu_answer() {
  AllocateResponse r;
  r.envs = {{"NVIDIA_VISIBLE_DEVICES", "GPU-a"}};
  r.mounts = {{"/usr/lib/libcuda.so", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", true}};
  r.devices = {{"/dev/nvidia0", "/dev/nvidia0", "rw"}};
  r.annotations = {{"example.com/gpu", "[\"GPU-a\"]"}};
  r.cdi_devices = {"nvidia.com/gpu=0"};
  return r;
}

// dead_socket leaves a socket file nobody listens on, as a crashed plugin does.
void dead_socket(const fs::path& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ::close(fd);
}

template <typename Fn>
std::chrono::milliseconds timed(Fn&& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}

// dra_assignment is a container with a claim for two GPUs (one CDI device
// each), a claim for a shared NIC of another driver, exclusive CPUs and
// memory on two NUMA nodes.
kubelet::ContainerAssignment dra_assignment() {
  kubelet::ContainerAssignment a;
  a.cpu_ids = {2, 3, 34, 35};
  a.memory = {{"memory", 8ull << 30, {0, 1}}, {"hugepages-1Gi", 2ull << 30, {1}}};
  a.dynamic_resources = {
      {"pod-gpus-x7k2p",
       "ns",
       {{"gpu.nvidia.com", "node-1", "gpu-0", {"k8s.gpu.nvidia.com/device=gpu-0"}, std::nullopt},
        {"gpu.nvidia.com", "node-1", "gpu-1", {"k8s.gpu.nvidia.com/device=gpu-1"}, std::nullopt}}},
      {"pod-nic-q9d4w",
       "ns",
       {{"dra.net", "node-1", "eth3", {"dra.net/nic=eth3", "dra.net/rdma=mlx5_3"}, "9f4e1c2a-share"}}}};
  return a;
}

struct Node {
  test::TempDir tmp;
  fs::path root = tmp.path();
  fs::path plugins = kubelet::device_plugin_dir(root);
  FakeKubelet kubelet{root};
};

}  // namespace

TEST_CASE("pod_resources uses Get, groups by resource and drops per-NUMA repeats") {
  auto kind = implementation();
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid",
                       {{"main", {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}, {"x/nic", {"n0"}}}}, {"idle", {}}});
  node.kubelet.add_pod("ns", "other", "uid2", {{"main", {{"nvidia.com/gpu", {"GPU-c"}}}}});
  node.kubelet.per_numa_entries(true);
  auto client = make_client(kind, node.root);
  auto got = client->pod_resources("ns", "pod", Budget(2000ms));
  CHECK(got == kubelet::PodResources{
                   "ns", "pod", {{"main", {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}, {"x/nic", {"n0"}}}}, {"idle", {}}}});
  CHECK(node.kubelet.calls("Get") == 1);
  CHECK(node.kubelet.calls("List") == 0);
  CHECK(node.kubelet.authority() == "localhost");
}

TEST_CASE("pod_resources carries exclusive CPUs, memory and DRA claims, through Get and through List") {
  auto kind = implementation();
  bool list = GENERATE(false, true);
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid", {{"main", {{"nvidia.com/gpu", {"GPU-a"}}}}, {"sidecar", {}}});
  node.kubelet.assign("ns", "pod", "main", dra_assignment());
  node.kubelet.assign("ns", "pod", "claims-only", {{}, {}, {{"pod-tpu", "ns", {{"tpu.example.com", "", "", {}, ""}}}}});
  if (list) node.kubelet.disable_get();
  auto client = make_client(kind, node.root);
  auto got = client->pod_resources("ns", "pod", Budget(2000ms));
  CHECK(got.containers == std::map<std::string, kubelet::ResourceDevices>{
                              {"main", {{"nvidia.com/gpu", {"GPU-a"}}}}, {"sidecar", {}}, {"claims-only", {}}});
  CHECK(got.assignment("main") == dra_assignment());
  const auto& gpus = got.assignment("main").dynamic_resources.at(0).claim_resources;
  CHECK(gpus.size() == 2);
  CHECK_FALSE(gpus.at(1).share_id.has_value());
  CHECK(got.assignment("main").dynamic_resources.at(1).claim_resources.at(0).share_id == "9f4e1c2a-share");
  // An empty share_id is present all the same (proto3 optional has presence).
  CHECK(got.assignment("claims-only").dynamic_resources.at(0).claim_resources.at(0).share_id == "");
  CHECK(got.assignment("claims-only").cpu_ids.empty());
  CHECK(got.assignment("sidecar").empty());
  CHECK(got.assignments.count("sidecar") == 0);
  CHECK(node.kubelet.calls(list ? "List" : "Get") == 1);
}

TEST_CASE("pod_resources from a kubelet without CPUs, memory and claims gives empty assignments") {
  auto kind = implementation();
  bool list = GENERATE(false, true);
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid", {{"main", {{"nvidia.com/gpu", {"GPU-a"}}}}});
  node.kubelet.add_pod("ns", "other", "uid2", {{"main", {}}});
  node.kubelet.assign("ns", "other", "main", dra_assignment());
  if (list) node.kubelet.disable_get();
  auto client = make_client(kind, node.root);
  auto got = client->pod_resources("ns", "pod", Budget(2000ms));
  CHECK(got.assignments.empty());
  const auto& ctr = got.assignment("main");
  CHECK(ctr.cpu_ids.empty());
  CHECK(ctr.memory.empty());
  CHECK(ctr.dynamic_resources.empty());
  CHECK(got.assignment("no-such-container").empty());
}

TEST_CASE("pod_resources falls back to List when Get is disabled or unimplemented") {
  auto kind = implementation();
  bool unimplemented = GENERATE(false, true);
  Node node;
  node.kubelet.add_pod("ns", "a", "u1", {{"main", {{"nvidia.com/gpu", {"GPU-a"}}}}});
  node.kubelet.add_pod("ns", "b", "u2", {{"main", {{"nvidia.com/gpu", {"GPU-b"}}}}});
  unimplemented ? node.kubelet.unimplement_get() : node.kubelet.disable_get();
  auto client = make_client(kind, node.root);
  CHECK(client->pod_resources("ns", "b", Budget(2000ms)).containers.at("main").at("nvidia.com/gpu") ==
        std::vector<std::string>{"GPU-b"});
  CHECK(client->pod_resources("ns", "a", Budget(2000ms)).containers.at("main").at("nvidia.com/gpu") ==
        std::vector<std::string>{"GPU-a"});
  CHECK(node.kubelet.calls("Get") == 1);  // remembered: the second lookup goes straight to List
  CHECK(node.kubelet.calls("List") == 2);
}

TEST_CASE("pod_resources of an unknown pod is NotFound, through Get and through List") {
  auto kind = implementation();
  bool list = GENERATE(false, true);
  Node node;
  if (list) node.kubelet.disable_get();
  auto client = make_client(kind, node.root);
  CHECK_THAT(error_of<kubelet::NotFound>([&] { client->pod_resources("ns", "ghost", Budget(2000ms)); }),
             Catch::Matchers::Contains(node.kubelet.socket().string()) && Catch::Matchers::Contains("ns/ghost"));
}

TEST_CASE("pod_resources retries once after the kubelet's rate limit, then gives up") {
  auto kind = implementation();
  Node node;
  node.kubelet.add_pod("ns", "pod", "uid", {{"main", {{"nvidia.com/gpu", {"GPU-a"}}}}});
  auto client = make_client(kind, node.root);
  node.kubelet.rate_limit_next(1);
  CHECK(client->pod_resources("ns", "pod", Budget(2000ms)).containers.size() == 1);
  CHECK(node.kubelet.calls("Get") == 2);
  node.kubelet.rate_limit_next(2);
  CHECK_THAT(error_of<kubelet::Unavailable>([&] { client->pod_resources("ns", "pod", Budget(2000ms)); }),
             Catch::Matchers::Contains("rejected by rate limit") &&
                 Catch::Matchers::Contains("call Get on `" + node.kubelet.socket().string() + "`"));
  CHECK(node.kubelet.calls("Get") == 4);
}

TEST_CASE("no kubelet: pod_resources is Unavailable naming the socket") {
  auto kind = implementation();
  test::TempDir tmp;
  auto client = make_client(kind, tmp.path());
  CHECK_THAT(error_of<kubelet::Unavailable>([&] { client->pod_resources("ns", "pod", Budget(2000ms)); }),
             Catch::Matchers::Contains("pod-resources/kubelet.sock") && Catch::Matchers::Contains("does not exist"));
}

TEST_CASE("allocatable lists the kubelet's devices") {
  auto kind = implementation();
  Node node;
  node.kubelet.set_allocatable({{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}});
  CHECK(make_client(kind, node.root)->allocatable(Budget(2000ms)) ==
        kubelet::ResourceDevices{{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}});
}

TEST_CASE("allocate returns the plugin's answer and sends the IDs") {
  auto kind = implementation();
  Node node;
  FakeDevicePlugin plugin(node.plugins / "nvidia.sock", {"GPU-a", "GPU-b"});
  plugin.respond(gpu_answer());
  plugin.set_options({true, false});
  auto client = make_client(kind, node.root);
  CHECK(client->allocate(plugin.socket(), "nvidia.com/gpu", {"GPU-a"}, Budget(2000ms)) == gpu_answer());
  CHECK(plugin.allocations() == std::vector<std::vector<std::string>>{{"GPU-a"}});
  CHECK(plugin.authority() == "localhost");
  CHECK(client->plugin_options(plugin.socket(), Budget(2000ms)) == kubelet::PluginOptions{true, false});
}

TEST_CASE("allocate: large answers arrive whole") {
  auto kind = implementation();
  Node node;
  FakeDevicePlugin plugin(node.plugins / "big.sock", {"d"});
  AllocateResponse big;
  for (int i = 0; i < 20000; ++i) big.envs["VAR_" + std::to_string(i)] = std::string(200, 'v');  // ~4.3 MB
  plugin.respond(big);
  CHECK(make_client(kind, node.root)->allocate(plugin.socket(), "r", {"d"}, Budget(5000ms)) == big);
}

TEST_CASE("pod_resources: a List of a large node is filtered to the pod") {
  auto kind = implementation();
  Node node;
  node.kubelet.disable_get();
  for (int i = 0; i < 3000; ++i)
    node.kubelet.add_pod("ns", "pod-" + std::to_string(i), "u" + std::to_string(i),
                         {{"main", {{"nvidia.com/gpu", {"GPU-" + std::to_string(i) + std::string(300, 'x')}}}},
                          {"side", {}}});  // ~1 MB answer
  auto got = make_client(kind, node.root)->pod_resources("ns", "pod-2999", Budget(5000ms));
  CHECK(got.containers.at("main").at("nvidia.com/gpu").at(0).starts_with("GPU-2999"));
}

TEST_CASE("allocate: a plugin answering the wrong number of containers is a Protocol error") {
  auto kind = implementation();
  int n = GENERATE(0, 2);
  Node node;
  FakeDevicePlugin plugin(node.plugins / "p.sock", {"d"});
  plugin.container_responses(n);
  CHECK_THAT(error_of<kubelet::Protocol>(
                 [&] { make_client(kind, node.root)->allocate(plugin.socket(), "r", {"d"}, Budget(2000ms)); }),
             Catch::Matchers::Contains("container responses to 1 request"));
}

TEST_CASE("allocate: a failing plugin's error names the socket and keeps its message") {
  auto kind = implementation();
  Node node;
  FakeDevicePlugin plugin(node.plugins / "hami.sock", {"d"});
  plugin.fail(test::Code::unknown, "no binding pod found on node n1");
  try {
    make_client(kind, node.root)->allocate(plugin.socket(), "r", {"d"}, Budget(2000ms));
    FAIL("allocate succeeded");
  } catch (const kubelet::Error& e) {
    CHECK(kubelet::kind_of(e) == kubelet::ErrorKind::other);
    CHECK_THAT(e.what(), Catch::Matchers::Contains("call Allocate on `" + plugin.socket().string() + "`") &&
                             Catch::Matchers::Contains("UNKNOWN: no binding pod found on node n1"));
  }
}

TEST_CASE("allocate: a slow plugin costs the budget, not its delay") {
  auto kind = implementation();
  Node node;
  FakeDevicePlugin plugin(node.plugins / "slow.sock", {"d"});
  plugin.delay(30s);
  auto client = make_client(kind, node.root);
  Budget budget(300ms);
  auto elapsed = timed([&] {
    CHECK_THAT(error_of<kubelet::DeadlineExceeded>([&] { client->allocate(plugin.socket(), "r", {"d"}, budget); }),
               Catch::Matchers::Contains("call Allocate on `" + plugin.socket().string() + "`: no answer within"));
  });
  CHECK(elapsed < 300ms + kMargin);
  // The budget is shared: the next call fails at once without dialling.
  CHECK_THROWS_AS(client->plugin_options(plugin.socket(), budget), kubelet::DeadlineExceeded);
  CHECK(plugin.calls("GetDevicePluginOptions") == 0);
}

TEST_CASE("allocate: missing socket and dead socket are Unavailable") {
  auto kind = implementation();
  Node node;
  dead_socket(node.plugins / "dead.sock");
  auto client = make_client(kind, node.root);
  CHECK_THAT(error_of<kubelet::Unavailable>(
                 [&] { client->allocate(node.plugins / "absent.sock", "r", {"d"}, Budget(2000ms)); }),
             Catch::Matchers::Contains("absent.sock`: socket does not exist"));
  auto elapsed = timed([&] {
    CHECK_THAT(error_of<kubelet::Unavailable>(
                   [&] { client->allocate(node.plugins / "dead.sock", "r", {"d"}, Budget(2000ms)); }),
               Catch::Matchers::Contains("dead.sock"));
  });
  CHECK(elapsed < 1000ms);  // refused at once, not at the deadline
}

TEST_CASE("plugin_for_resource: a configured socket is used as given") {
  auto kind = implementation();
  Node node;
  FakeDevicePlugin plugin(node.plugins / "nvidia.sock", {"GPU-a"});
  auto client = make_client(kind, node.root);
  CHECK(client->plugin_for_resource("nvidia.com/gpu", "nvidia.sock", {}, Budget(2000ms)) == plugin.socket());
  CHECK(client->plugin_for_resource("nvidia.com/gpu", plugin.socket().string(), {}, Budget(2000ms)) == plugin.socket());
  CHECK(plugin.calls("ListAndWatch") == 0);
  CHECK_THAT(error_of<kubelet::Unavailable>(
                 [&] { client->plugin_for_resource("nvidia.com/gpu", "gone.sock", {}, Budget(2000ms)); }),
             Catch::Matchers::Contains("gone.sock` does not exist"));
}

TEST_CASE("plugin_for_resource: discovery matches device IDs, skipping kubelet.sock and dead sockets") {
  auto kind = implementation();
  Node node;
  FakeDevicePlugin gpu(node.plugins / "nvidia.sock", {"GPU-a", "GPU-b"});
  FakeDevicePlugin nic(node.plugins / "nic.sock", {"n0"});
  FakeDevicePlugin slow(node.plugins / "slow.sock", {"s0"});
  slow.delay(30s);
  dead_socket(node.plugins / "dead.sock");
  test::write_checkpoint(node.root, {}, {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}, {"x/nic", {"n0"}}},
                         test::CheckpointLayout::numa);
  gpu.respond(gpu_answer());
  auto client = make_client(kind, node.root);
  Budget budget(800ms);
  auto elapsed = timed([&] {
    auto socket = client->plugin_for_resource("nvidia.com/gpu", "", {"GPU-b"}, budget);
    CHECK(socket == gpu.socket());
    // The hung plugin cost a quarter of the budget; Allocate still fits.
    CHECK(client->allocate(socket, "nvidia.com/gpu", {"GPU-b"}, budget) == gpu_answer());
  });
  CHECK(elapsed < 200ms + kMargin);
  CHECK(node.kubelet.calls("Register") == 0);  // kubelet.sock was not dialled as a plugin
  // No IDs given: the checkpoint's RegisteredDevices are matched.
  CHECK(client->plugin_for_resource("x/nic", "", {}, Budget(400ms)) == nic.socket());
  // Nobody lists GPU-z, but the hung plugin might have: that is a deadline.
  CHECK_THAT(error_of<kubelet::DeadlineExceeded>(
                 [&] { client->plugin_for_resource("nvidia.com/gpu", "", {"GPU-z"}, Budget(400ms)); }),
             Catch::Matchers::Contains("none that did lists devices GPU-z") &&
                 Catch::Matchers::Contains("dead.sock: ") && Catch::Matchers::Contains("nic.sock: 1 devices") &&
                 Catch::Matchers::Contains("slow.sock: "));
  CHECK_THAT(error_of<kubelet::NotFound>([&] { client->plugin_for_resource("y/unknown", "", {}, Budget(400ms)); }),
             Catch::Matchers::Contains("no device IDs to match"));
}

TEST_CASE("plugin_for_resource: two plugins with the same devices are ambiguous") {
  auto kind = implementation();
  Node node;
  FakeDevicePlugin a(node.plugins / "a.sock", {"0", "1"});
  FakeDevicePlugin b(node.plugins / "b.sock", {"0", "1"});
  auto client = make_client(kind, node.root);
  CHECK_THAT(error_of<kubelet::NotFound>([&] { client->plugin_for_resource("r", "", {"0"}, Budget(2000ms)); }),
             Catch::Matchers::Contains("several plugins") && Catch::Matchers::Contains("a.sock, b.sock"));
  CHECK_THAT(error_of<kubelet::NotFound>([&] {
               client->plugin_for_resource("r", "", {"0", "7"}, Budget(2000ms));
             }),
             Catch::Matchers::Contains("no plugin lists devices 0, 7 (a.sock: 2 devices; b.sock: 2 devices)"));
}

TEST_CASE("list_plugins reports devices, guessed resources and errors") {
  auto kind = implementation();
  Node node;
  FakeDevicePlugin gpu(node.plugins / "nvidia.sock", {"GPU-a", "GPU-b"});
  FakeDevicePlugin broken(node.plugins / "broken.sock", {"x"});
  broken.fail(test::Code::internal, "driver not loaded");
  dead_socket(node.plugins / "dead.sock");
  test::write_checkpoint(node.root, {}, {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}}, test::CheckpointLayout::numa);
  auto plugins = make_client(kind, node.root)->list_plugins(Budget(2000ms));
  REQUIRE(plugins.size() == 3);
  CHECK(plugins[0].socket.filename() == "broken.sock");
  CHECK_THAT(plugins[0].error, Catch::Matchers::Contains("INTERNAL: driver not loaded"));
  CHECK(plugins[1].socket.filename() == "dead.sock");
  CHECK_FALSE(plugins[1].reachable());
  CHECK(plugins[2].socket.filename() == "nvidia.sock");
  CHECK(plugins[2].resource == "nvidia.com/gpu");
  CHECK(plugins[2].devices == std::vector<kubelet::Device>{{"GPU-a", "Healthy", {}}, {"GPU-b", "Healthy", {}}});
}

TEST_CASE("checkpoint lookups need no kubelet and no helper") {
  test::TempDir tmp;
  test::write_checkpoint(tmp.path(), {{"uid", "main", "nvidia.com/gpu", {{"0", {"GPU-a"}}}, gpu_answer()}}, {},
                         test::CheckpointLayout::numa);
  // A helper path that does not exist proves no process is started.
  auto client = kubelet::make_helper_client({tmp.path()}, tmp / "no-such-helper");
  auto entry = client->checkpoint_entry("uid", "main", "nvidia.com/gpu");
  REQUIRE(entry);
  CHECK(entry->alloc == gpu_answer());
  CHECK(entry->device_ids == std::vector<std::string>{"GPU-a"});
  CHECK_FALSE(client->checkpoint_entry("uid", "main", "other"));
  CHECK(client->checkpoint("uid", "nope").empty());
  CHECK_THAT(error_of<kubelet::Error>([&] { client->allocatable(Budget(500ms)); }),
             Catch::Matchers::Contains("no-such-helper"));
}

TEST_CASE("helper: one that hangs is killed at the deadline and replaced") {
  test::TempDir tmp;
  test::write_file(tmp / "hang", "#!/bin/sh\nexec sleep 30\n", 0755);
  auto client = kubelet::make_helper_client({tmp.path()}, tmp / "hang");
  for (int i = 0; i < 2; ++i) {
    auto elapsed = timed([&] {
      CHECK_THAT(error_of<kubelet::DeadlineExceeded>([&] { client->allocatable(Budget(200ms)); }),
                 Catch::Matchers::Contains("helper killed"));
    });
    CHECK(elapsed < 200ms + kMargin);
  }
}

TEST_CASE("helper: one that dies or talks nonsense is a Protocol error") {
  test::TempDir tmp;
  test::write_file(tmp / "dies", "#!/bin/sh\nexit 3\n", 0755);
  test::write_file(tmp / "babbles", "#!/bin/sh\nread line; echo 'hello'\n", 0755);
  CHECK_THAT(error_of<kubelet::Protocol>(
                 [&] { kubelet::make_helper_client({tmp.path()}, tmp / "dies")->allocatable(Budget(2000ms)); }),
             Catch::Matchers::Contains("helper exited with status 3"));
  CHECK_THAT(error_of<kubelet::Protocol>(
                 [&] { kubelet::make_helper_client({tmp.path()}, tmp / "babbles")->allocatable(Budget(2000ms)); }),
             Catch::Matchers::Contains("not a JSON object"));
}

TEST_CASE("fake Registration records what plugins register") {
  Node node;
  FakeDevicePlugin plugin(node.plugins / "nvidia.sock", {"GPU-a"});
  plugin.register_with(node.plugins / "kubelet.sock", "nvidia.com/gpu");
  auto regs = node.kubelet.registrations();
  REQUIRE(regs.size() == 1);
  CHECK(regs[0].version == "v1beta1");
  CHECK(regs[0].endpoint == "nvidia.sock");
  CHECK(regs[0].resource_name == "nvidia.com/gpu");
}
