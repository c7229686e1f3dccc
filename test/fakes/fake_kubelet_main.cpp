// SPDX-License-Identifier: Apache-2.0
// specshim-fake-kubelet --config FILE [--root DIR]: the in-process fakes as a
// process, for integration and e2e tests. Serves until SIGTERM or SIGINT and
// prints "ready" on stdout once every socket listens. FILE:
// {
//   "kubelet_root": "/tmp/k",                 (or --root)
//   "get": "enabled" | "disabled" | "unimplemented",
//   "per_numa_entries": false,
//   "pods": [{"namespace": "ns", "name": "p", "uid": "u",
//             "containers": {"main": {"nvidia.com/gpu": ["GPU-1"]}},
//             "assignments": {"main": {"cpu_ids": [2, 3],
//                                      "memory": [{"memory_type": "memory", "size": 1073741824,
//                                                  "numa_nodes": [0]}],
//                                      "dynamic_resources": [{"claim_name": "gpus", "claim_namespace": "ns",
//                                          "claim_resources": [{"driver_name": "gpu.example.com",
//                                              "pool_name": "node1", "device_name": "gpu-0",
//                                              "cdi_devices": ["example.com/gpu=gpu-0"],
//                                              "share_id": "..."}]}]}}}],   (share_id optional)
//   "allocatable": {"nvidia.com/gpu": ["GPU-1", "GPU-2"]},
//   "plugins": [{"socket": "nvidia.sock", "devices": ["GPU-1"], "register": "nvidia.com/gpu",
//                "allocate": {"envs": {...}, "mounts": [...], "devices": [...],
//                             "annotations": {...}, "cdi_devices": [...]},
//                "delay_ms": 0, "fail": {"code": 2, "message": "..."}}],
//   "checkpoint": {"layout": "numa" | "flat", "registered": {"nvidia.com/gpu": ["GPU-1"]},
//                  "entries": [{"pod_uid": "u", "container": "main", "resource": "nvidia.com/gpu",
//                               "devices_by_numa": {"0": ["GPU-1"]}, "alloc": {...}}]}
// }
// Plugin sockets are relative to <kubelet_root>/device-plugins/.
#include <signal.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "fake_kubelet.h"
#include "specshim/kubelet/client.h"
#include "specshim/kubelet/json.h"

using nlohmann::json;
using namespace specshim;
namespace fs = std::filesystem;

namespace {

void write_checkpoint_from(const fs::path& root, const json& cp) {
  std::vector<test::FakeCheckpointEntry> entries;
  for (const auto& e : cp.value("entries", json::array())) {
    test::FakeCheckpointEntry fe{e.at("pod_uid"), e.at("container"), e.at("resource"),
                                 e.value("devices_by_numa", std::map<std::string, std::vector<std::string>>{}),
                                 std::nullopt};
    if (e.contains("alloc")) fe.alloc = e["alloc"].get<kubelet::AllocateResponse>();
    entries.push_back(std::move(fe));
  }
  auto layout = cp.value("layout", "numa") == "flat" ? test::CheckpointLayout::flat : test::CheckpointLayout::numa;
  test::write_checkpoint(root, entries, cp.value("registered", kubelet::ResourceDevices{}), layout);
}

}  // namespace

int main(int argc, char** argv) {
  fs::path config, root;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--config")
      config = argv[i + 1];
    else if (arg == "--root")
      root = argv[i + 1];
  }
  if (config.empty()) {
    std::cerr << "usage: specshim-fake-kubelet --config FILE [--root DIR]\n";
    return 2;
  }
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before gRPC starts its threads

  json c = json::parse(std::ifstream(config));
  if (root.empty()) root = c.at("kubelet_root").get<std::string>();
  test::FakeKubelet kubelet(root);
  std::string get = c.value("get", "enabled");
  if (get == "disabled") kubelet.disable_get();
  if (get == "unimplemented") kubelet.unimplement_get();
  kubelet.per_numa_entries(c.value("per_numa_entries", false));
  kubelet.set_allocatable(c.value("allocatable", kubelet::ResourceDevices{}));
  for (const auto& p : c.value("pods", json::array())) {
    kubelet.add_pod(p.at("namespace"), p.at("name"), p.value("uid", ""),
                    p.value("containers", std::map<std::string, kubelet::ResourceDevices>{}));
    json assignments = p.value("assignments", json::object());
    for (const auto& [container, assigned] : assignments.items())
      kubelet.assign(p.at("namespace"), p.at("name"), container, assigned.get<kubelet::ContainerAssignment>());
  }

  std::vector<std::unique_ptr<test::FakeDevicePlugin>> plugins;
  for (const auto& p : c.value("plugins", json::array())) {
    auto plugin =
        std::make_unique<test::FakeDevicePlugin>(kubelet::device_plugin_dir(root) / p.at("socket").get<std::string>(),
                                                 p.value("devices", std::vector<std::string>{}));
    if (p.contains("allocate")) plugin->respond(p["allocate"].get<kubelet::AllocateResponse>());
    plugin->delay(std::chrono::milliseconds(p.value("delay_ms", 0)));
    if (p.contains("fail"))
      plugin->fail(test::Code(p["fail"].value("code", 2)), p["fail"].value("message", "fake failure"));
    if (p.contains("register")) plugin->register_with(kubelet::device_plugin_dir(root) / "kubelet.sock", p["register"]);
    plugins.push_back(std::move(plugin));
  }
  if (c.contains("checkpoint")) write_checkpoint_from(root, c["checkpoint"]);

  std::cout << "ready" << std::endl;
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}
