// SPDX-License-Identifier: Apache-2.0
#include "runc_log.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tempdir.h"

using namespace specshim::shim;

TEST_CASE("runc log json line is what containerd decodes") {
  auto line = format_runc_log_line("error", "specshim: bad \"x\"\nnext", "json", "2026-11-29T22:56:18Z");
  REQUIRE(line ==
          "{\"level\":\"error\",\"msg\":\"specshim: bad \\\"x\\\"\\nnext\",\"time\":\"2026-11-29T22:56:18Z\"}\n");
  auto j = nlohmann::json::parse(line);
  REQUIRE(j["msg"] == "specshim: bad \"x\"\nnext");
}

TEST_CASE("runc log text line matches logrus' text form") {
  REQUIRE(format_runc_log_line("error", "a \"b\"\tc", "text", "2026-11-29T22:56:18Z") ==
          "time=\"2026-11-29T22:56:18Z\" level=error msg=\"a \\\"b\\\"\\tc\"\n");
}

TEST_CASE("runc log survives invalid UTF-8 in the message") {
  auto line = format_runc_log_line("error", "bad \xff byte", "json", "t");
  REQUIRE_NOTHROW(nlohmann::json::parse(line));
}

TEST_CASE("report_error appends to the --log file") {
  specshim::test::TempDir d;
  specshim::test::write_file(d / "log.json", "{\"level\":\"info\",\"msg\":\"earlier\"}\n");
  report_error((d / "log.json").string(), "json", "boom");
  auto text = specshim::test::read_file(d / "log.json");
  REQUIRE_THAT(text,
               Catch::StartsWith(
                   "{\"level\":\"info\",\"msg\":\"earlier\"}\n{\"level\":\"error\",\"msg\":\"boom\",\"time\":\"20"));
  REQUIRE(rfc3339_now().size() == 20);
}
