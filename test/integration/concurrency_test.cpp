// SPDX-License-Identifier: Apache-2.0
// 64 creates at once through specshim and real runc, each with its own bundle
// and its own passwd change: all correct, no temp files left, no shared state.
#include <catch2/catch.hpp>
#include <thread>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;

TEST_CASE("concurrency: 64 parallel creates through real runc are all correct") {
  constexpr int kContainers = 64;
  TempDir tmp;
  Shim shim(tmp.path(), "");
  std::vector<std::unique_ptr<BusyboxBundle>> bundles;
  for (int i = 0; i < kContainers; ++i) {
    auto b = std::make_unique<BusyboxBundle>(tmp / ("b" + std::to_string(i)));
    unsigned uid = 20000 + static_cast<unsigned>(i);
    b->set_user(uid, uid);
    b->set_args({"/bin/sh", "-c", "echo $(id -un):$(id -gn)"});
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
    REQUIRE(results[i].out == "user" + uid + ":group" + uid + "\n");
    for (auto& e : fs::directory_iterator(bundles[i]->dir()))
      REQUIRE(e.path().filename().string().find(".specshim-") == std::string::npos);
  }
}
