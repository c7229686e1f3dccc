// SPDX-License-Identifier: Apache-2.0
// specshim-kubelet-bench: times what one create pays to learn an allocation
// over RPC: a PodResources Get plus one Allocate, through a fresh client each
// iteration. With --mode helper (the shim's path) that includes starting the
// specshim-kubelet helper (exec + static init) and killing it; --mode grpc
// is the in-process client, for comparison; --mode checkpoint times the
// RPC-free path instead: one checkpoint lookup (read, parse, decode
// AllocResp). Run by scripts/bench-kubelet.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "specshim/kubelet/client.h"

using namespace specshim::kubelet;
using namespace std::chrono;

int main(int argc, char** argv) {
  std::string root, helper, mode = "helper";
  int iterations = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--root")
      root = argv[i + 1];
    else if (a == "--helper")
      helper = argv[i + 1];
    else if (a == "--mode")
      mode = argv[i + 1];
    else if (a == "--iterations")
      iterations = std::stoi(argv[i + 1]);
  }
  if (root.empty() || (mode == "helper" && helper.empty())) {
    std::fprintf(stderr,
                 "usage: specshim-kubelet-bench --root DIR [--helper PATH] [--mode helper|grpc] "
                 "[--iterations N]\n");
    return 2;
  }
  ClientOptions options{root};
  std::vector<double> ms;
  for (int i = 0; i < iterations + 10; ++i) {
    auto start = steady_clock::now();
    do {
      auto client = mode == "grpc" ? make_grpc_client(options) : make_helper_client(options, helper);
      if (mode == "checkpoint") {
        if (!client->checkpoint_entry("uid-1", "main", "nvidia.com/gpu")) return 1;
        continue;
      }
      Budget budget(milliseconds(2000));
      PodResources pod = client->pod_resources("bench", "pod", budget);
      const auto& ids = pod.containers.at("main").at("nvidia.com/gpu");
      AllocateResponse r = client->allocate(device_plugin_dir(root) / "nvidia.sock", "nvidia.com/gpu", ids, budget);
      if (r.envs.empty()) return 1;
    } while (false);
    if (i >= 10) ms.push_back(duration<double, std::milli>(steady_clock::now() - start).count());  // 10 warm-ups
  }
  std::sort(ms.begin(), ms.end());
  double mean = 0;
  for (double v : ms) mean += v / ms.size();
  std::printf("%-10s %s, fresh client, %d runs: min %.2f ms  median %.2f ms  mean %.2f ms  p95 %.2f ms\n", mode.c_str(),
              mode == "checkpoint" ? "checkpoint lookup" : "Get+Allocate", iterations, ms.front(), ms[ms.size() / 2],
              mean, ms[ms.size() * 95 / 100]);
  return 0;
}
