// SPDX-License-Identifier: Apache-2.0
// 64 creates at once through specshim and real runc, each with its own bundle,
// its own passwd change and its own CDI device from one shared spec dir: all
// correct, no temp files left, no shared state.
#include <catch2/catch.hpp>
#include <thread>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;

TEST_CASE("concurrency: 64 parallel creates through real runc are all correct") {
  constexpr int kContainers = 64;
  TempDir tmp;
  // One spec, a device per container: its env and a read-only mount of a file of its own.
  std::string cdi = "cdiVersion: 0.5.0\nkind: example.com/slot\ndevices:\n";
  for (int i = 0; i < kContainers; ++i) {
    std::string n = std::to_string(i);
    write_file(tmp / "host" / ("slot" + n), "slot-file-" + n + "\n");
    cdi += "- name: \"" + n + "\"\n  containerEdits:\n    env: [SLOT=" + n +
           "]\n    mounts:\n    - {hostPath: " + (tmp / "host" / ("slot" + n)).string() +
           ", containerPath: /slot, options: [ro, bind]}\n";
  }
  write_file(tmp / "cdi" / "slots.yaml", cdi);
  Shim shim(tmp.path(), "[cdi]\nspec-dirs = [\"" + (tmp / "cdi").string() + "\"]\n");
  std::vector<std::unique_ptr<BusyboxBundle>> bundles;
  for (int i = 0; i < kContainers; ++i) {
    auto b = std::make_unique<BusyboxBundle>(tmp / ("b" + std::to_string(i)));
    unsigned uid = 20000 + static_cast<unsigned>(i);
    b->set_user(uid, uid);
    b->set_args({"/bin/sh", "-c", "echo $(id -un):$(id -gn) $SLOT $(cat /slot)"});
    b->spec()["annotations"]["cdi.k8s.io/slot"] = "example.com/slot=" + std::to_string(i);
    b->save();
    bundles.push_back(std::move(b));
  }
  std::vector<ProcessResult> results(kContainers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kContainers; ++i)
    threads.emplace_back([&, i] { results[i] = shim.run(*bundles[i], unique_id("conc")); });
  for (auto& t : threads) t.join();

  for (int i = 0; i < kContainers; ++i) {
    INFO("container " << i << ": " << results[i].err << Shim::log(*bundles[i]));
    std::string uid = std::to_string(20000 + i);
    REQUIRE(results[i].exit_code == 0);
    std::string n = std::to_string(i);
    REQUIRE(results[i].out == "user" + uid + ":group" + uid + " " + n + " slot-file-" + n + "\n");
    for (auto& e : fs::directory_iterator(bundles[i]->dir()))
      REQUIRE(e.path().filename().string().find(".specshim-") == std::string::npos);
  }
}
