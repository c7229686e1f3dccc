// SPDX-License-Identifier: Apache-2.0
#include "runc_log.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "specshim/base/error.h"
#include "specshim/base/runtime_kind.h"
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

TEST_CASE("join_some names at most a few items, then how many more") {
  using specshim::join_some;
  REQUIRE(join_some({}, ", ") == "");
  REQUIRE(join_some({"a", "b"}, ", ", 2) == "a, b");
  REQUIRE(join_some({"a", "b", "c"}, ", ", 2) == "a, b, \u2026 and 1 more");
  std::vector<std::string> many(25, "x");
  REQUIRE(join_some(many, ",") == "x,x,x,x,x,x,x,x,x,x,\u2026 and 15 more");
}

TEST_CASE("cap_message keeps a short message and cuts a long one at a character, marked") {
  using specshim::cap_message;
  REQUIRE(cap_message("short", 64) == "short");
  std::string exact(4096, 'a');
  REQUIRE(cap_message(exact) == exact);
  std::string cut = cap_message(std::string(10000, 'a'));
  REQUIRE(cut.size() <= 4096);
  REQUIRE(cut.size() > 4000);
  REQUIRE_THAT(cut, Catch::EndsWith("aaa \u2026 [message cut: 10000 bytes]"));
  // A two-byte character across the cut is dropped whole, never halved.
  for (std::size_t pad = 0; pad < 4; ++pad) {
    std::string text = std::string(pad, 'a');
    while (text.size() < 200) text += "\xc3\xa9";  // é
    std::string out = cap_message(text, 100);
    REQUIRE(out.size() <= 100);
    REQUIRE_NOTHROW(nlohmann::json::parse(nlohmann::json(out).dump()));  // valid UTF-8 throughout
    REQUIRE((static_cast<unsigned char>(out[out.find(" \u2026 [") - 1]) & 0xC0) != 0xC0);
  }
}

TEST_CASE("report_error caps the msg of the line it writes") {
  specshim::test::TempDir d;
  auto log = (d / "log.json").string();
  report_error(log, "json", std::string(100000, 'm'));
  auto text = specshim::test::read_file(log);
  REQUIRE(text.size() < 4200);
  auto msg = nlohmann::json::parse(text)["msg"].get<std::string>();
  REQUIRE(msg.size() <= specshim::kMessageMax);
  REQUIRE_THAT(msg, Catch::EndsWith("[message cut: 100000 bytes]"));
}

TEST_CASE("report_error writes to crun's file:PATH and not to a file named after journald:ID") {
  specshim::test::TempDir d;
  report_error("file:" + (d / "log.json").string(), "json", "boom");
  REQUIRE_THAT(specshim::test::read_file(d / "log.json"), Catch::Contains("\"msg\":\"boom\""));
  REQUIRE(specshim::runtime::log_file("journald:ctr").empty());
  REQUIRE(specshim::runtime::log_file("syslog:ctr").empty());
  REQUIRE(specshim::runtime::log_file("/b/log.json") == "/b/log.json");
}
