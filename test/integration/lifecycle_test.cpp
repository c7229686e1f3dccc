// SPDX-License-Identifier: Apache-2.0
// The container lifecycle through specshim with real runc.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;

TEST_CASE("run: a busybox container through specshim and runc, exit code passes through") {
  TempDir tmp;
  BusyboxBundle b(tmp / "bundle");
  b.set_args({"/bin/sh", "-c", "echo hello from $(id -u); exit 3"});
  b.save();
  Shim shim(tmp.path(), "");
  auto r = shim.run(b, unique_id("it-run"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.out == "hello from 0\n");
  REQUIRE(r.exit_code == 3);
}

TEST_CASE("create/start/state/kill/delete through specshim") {
  TempDir tmp;
  BusyboxBundle b(tmp / "bundle");
  b.set_args({"/bin/sh", "-c", "echo started > /tmp/marker; exec sleep 600"});
  b.save();
  Shim shim(tmp.path(), "");
  std::string id = unique_id("it-life");
  auto create = shim.call(b, {"create", "--bundle", b.dir().string(), "--pid-file", (b.dir() / "init.pid").string(), id},
                          false);
  INFO(Shim::log(b));
  REQUIRE(create.exit_code == 0);
  REQUIRE(fs::exists(b.dir() / "init.pid"));
  auto state = shim.call(b, {"state", id});
  REQUIRE(nlohmann::json::parse(state.out)["status"] == "created");
  REQUIRE(shim.call(b, {"start", id}).exit_code == 0);
  auto running = shim.call(b, {"state", id});
  REQUIRE(nlohmann::json::parse(running.out)["status"] == "running");
  REQUIRE(shim.call(b, {"kill", id, "9"}).exit_code == 0);
  // delete --force waits for the killed process; no polling needed.
  REQUIRE(shim.call(b, {"delete", "--force", id}).exit_code == 0);
  auto gone = shim.call(b, {"state", id});
  REQUIRE(gone.exit_code != 0);
  REQUIRE(read_file(b.rootfs() / "tmp" / "marker") == "started\n");
}

TEST_CASE("a failed create leaves no container and surfaces specshim's message") {
  TempDir tmp;
  BusyboxBundle b(tmp / "bundle");
  Shim shim(tmp.path(), "[chain]\norder = [\"no-such-modifier\"]\n");
  std::string id = unique_id("it-fail");
  auto r = shim.call(b, {"create", "--bundle", b.dir().string(), id}, false);
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(Shim::log(b), Catch::Contains("\"level\":\"error\",\"msg\":\"specshim: config `"));
  REQUIRE_THAT(Shim::log(b), Catch::Contains("unknown modifier `no-such-modifier`"));
  REQUIRE(shim.call(b, {"state", id}).exit_code != 0);  // runc never ran
}
