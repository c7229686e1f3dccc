// SPDX-License-Identifier: Apache-2.0
// The specshim-fake-kubelet binary, driven by a JSON file, answered through
// the real helper: the setup integration and e2e tests use.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "specshim/kubelet/client.h"
#include "tempdir.h"

using namespace specshim;
using namespace std::chrono_literals;

namespace {

// FakeProcess runs specshim-fake-kubelet until destroyed.
class FakeProcess {
 public:
  explicit FakeProcess(const std::filesystem::path& config) {
    int out[2];
    REQUIRE(::pipe(out) == 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    const char* argv[] = {SPECSHIM_FAKE_KUBELET_BIN, "--config", config.c_str(), nullptr};
    REQUIRE(::posix_spawn(&pid_, argv[0], &fa, nullptr, const_cast<char* const*>(argv), environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    // Block until the fake says every socket listens.
    std::string got;
    char c;
    while (got.find('\n') == std::string::npos && ::read(out[0], &c, 1) == 1) got += c;
    ::close(out[0]);
    REQUIRE(got == "ready\n");
  }
  ~FakeProcess() {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }

 private:
  pid_t pid_ = -1;
};

}  // namespace

TEST_CASE("specshim-fake-kubelet serves a kubelet, plugins and a checkpoint from JSON") {
  test::TempDir tmp;
  test::write_file(tmp / "fake.json", R"({
    "kubelet_root": ")" + tmp.path().string() +
                                          R"(",
    "get": "disabled",
    "pods": [{"namespace": "ns", "name": "pod", "uid": "uid-1",
              "containers": {"main": {"nvidia.com/gpu": ["GPU-a"]}},
              "assignments": {"main": {"cpu_ids": [4, 5],
                                       "memory": [{"memory_type": "memory", "size": 1024, "numa_nodes": [1]}],
                                       "dynamic_resources": [{"claim_name": "gpus", "claim_namespace": "ns",
                                           "claim_resources": [{"driver_name": "gpu.example.com",
                                               "pool_name": "node-1", "device_name": "gpu-0",
                                               "cdi_devices": ["example.com/gpu=gpu-0"],
                                               "share_id": "s-1"}]}]}}}],
    "plugins": [{"socket": "nvidia.sock", "devices": ["GPU-a", "GPU-b"], "register": "nvidia.com/gpu",
                 "allocate": {"envs": {"NVIDIA_VISIBLE_DEVICES": "GPU-a"},
                              "devices": [{"container_path": "/dev/nvidia0", "host_path": "/dev/nvidia0",
                                           "permissions": "rw"}]}}],
    "checkpoint": {"layout": "flat", "registered": {"nvidia.com/gpu": ["GPU-a", "GPU-b"]},
                   "entries": [{"pod_uid": "uid-1", "container": "main", "resource": "nvidia.com/gpu",
                                "devices_by_numa": {"0": ["GPU-a"]},
                                "alloc": {"envs": {"FROM": "checkpoint"}}}]}
  })");
  FakeProcess fake(tmp / "fake.json");
  auto client = kubelet::make_helper_client({tmp.path()}, SPECSHIM_KUBELET_HELPER_BIN);
  kubelet::Budget budget(5000ms);
  auto pod = client->pod_resources("ns", "pod", budget);
  auto ids = pod.containers.at("main").at("nvidia.com/gpu");
  CHECK(ids == std::vector<std::string>{"GPU-a"});
  CHECK(pod.assignment("main") ==
        kubelet::ContainerAssignment{
            {4, 5},
            {{"memory", 1024, {1}}},
            {{"gpus", "ns", {{"gpu.example.com", "node-1", "gpu-0", {"example.com/gpu=gpu-0"}, "s-1"}}}}});
  auto socket = client->plugin_for_resource("nvidia.com/gpu", "", ids, budget);
  CHECK(socket.filename() == "nvidia.sock");
  auto answer = client->allocate(socket, "nvidia.com/gpu", ids, budget);
  CHECK(answer.envs.at("NVIDIA_VISIBLE_DEVICES") == "GPU-a");
  CHECK(answer.devices.at(0).permissions == "rw");
  CHECK(client->checkpoint_entry("uid-1", "main", "nvidia.com/gpu")->alloc->envs.at("FROM") == "checkpoint");
}
