// SPDX-License-Identifier: Apache-2.0
// Spec::parse reads JSON with specshim's own reader: it must accept and
// refuse what nlohmann's strict parser does and build the same DOM, number
// types included.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "json_reference.h"
#include "specshim/base/error.h"
#include "specshim/base/spec.h"

using specshim::Error;
using specshim::Json;
using specshim::Spec;
using specshim::test::reference_parse;
using specshim::test::same_tree;

namespace {

// agree checks one input: both refuse it, or both read the same tree.
void agree(const std::string& text) {
  INFO("input: " << Json(text).dump(-1, ' ', true, Json::error_handler_t::replace));
  std::optional<Json> want = reference_parse(text);
  if (want && !want->is_object()) want.reset();  // a spec is an object
  std::optional<Json> got;
  try {
    got = Spec::parse(text).json();
  } catch (const Error&) {
  }
  REQUIRE(got.has_value() == want.has_value());
  if (got) REQUIRE(same_tree(*got, *want));
}

std::string member(const std::string& value) {
  return "{\"v\":" + value + "}";
}

}  // namespace

TEST_CASE("json reader: scalars and number types as nlohmann") {
  for (const char* v : {"true",
                        "false",
                        "null",
                        "0",
                        "-0",
                        "7",
                        "-7",
                        "0.5",
                        "-0.0",
                        "1e3",
                        "1E+3",
                        "2.50E-1",
                        "1e-400",
                        "1e400",
                        "-1e400",
                        "9223372036854775807",
                        "9223372036854775808",
                        "-9223372036854775808",
                        "-9223372036854775809",
                        "18446744073709551615",
                        "18446744073709551616",
                        "123456789012345678901234567890",
                        "01",
                        "-01",
                        "1.",
                        ".5",
                        "-",
                        "+1",
                        "1e",
                        "1e+",
                        "0x10",
                        "1.5e3.2",
                        "tru",
                        "truex",
                        "nul",
                        "falsе",
                        "NaN",
                        "Infinity",
                        "-Infinity"})
    agree(member(v));
}

TEST_CASE("json reader: strings, escapes and UTF-8 as nlohmann") {
  for (const char* v : {R"("")",
                        R"("plain")",
                        R"("a\"b\\c\/d\b\f\n\r\t")",
                        R"("\u0000")",
                        R"("\u00e9\u20AC")",
                        R"("\ud834\udd1e")",
                        R"("\uD834")",
                        R"("\uD834x")",
                        R"("\uD834\u0041")",
                        R"("\uDD1E")",
                        R"("\u12")",
                        R"("\u12G4")",
                        R"("\x")",
                        R"("\)",
                        "\"\x7f\"",
                        "\"\x01\"",
                        "\"tab\there\"",
                        "\"nl\nhere\"",
                        "\"é✓𝄞\"",
                        "\"\xc3\xa9\"",
                        "\"\xc0\x80\"",
                        "\"\xc1\xbf\"",
                        "\"\xe0\x80\x80\"",
                        "\"\xe0\xa0\x80\"",
                        "\"\xed\xa0\x80\"",
                        "\"\xed\x9f\xbf\"",
                        "\"\xef\xbf\xbf\"",
                        "\"\xf0\x8f\xbf\xbf\"",
                        "\"\xf0\x90\x80\x80\"",
                        "\"\xf4\x8f\xbf\xbf\"",
                        "\"\xf4\x90\x80\x80\"",
                        "\"\xf5\x80\x80\x80\"",
                        "\"\xff\"",
                        "\"\x80\"",
                        "\"\xc3\"",
                        "\"\xe2\x82\"",
                        "\"\xe2\x82x\"",
                        "\"unterminated"})
    agree(member(v));
}

TEST_CASE("json reader: structure, space and repeated keys as nlohmann") {
  for (const char* t : {"{}",
                        " {} ",
                        "\t\r\n{\n}\n",
                        "{ \"a\" : [ 1 , { } , [ ] , [[]] ] }",
                        "{\"a\":1,}",
                        "{\"a\":[1,]}",
                        "{,}",
                        "{\"a\"}",
                        "{\"a\":}",
                        "{\"a\" 1}",
                        "{\"a\":1 \"b\":2}",
                        "{a:1}",
                        "{'a':1}",
                        "{\"a\":1}}",
                        "{\"a\":[1}",
                        "{\"a\":{]}",
                        "{\"a\":1",
                        "[",
                        "",
                        " ",
                        "[]",
                        "\"s\"",
                        "1",
                        "{}{}",
                        "{} x",
                        "{}\x00",
                        "\xef\xbb\xbf{}",
                        "\xef\xbb{}",
                        "\xef{}",
                        "{}\xef\xbb\xbf",
                        "{\"a\":1,\"b\":2,\"a\":3}",
                        "{\"a\":1,\"a\":{\"x\":1},\"a\":[2]}",
                        "{\"\":1,\"\":2}",
                        "{\"a\":1}\n",
                        "{\"a\":1} \t\r\n",
                        "{\f}",
                        "{\"a\":1}/*c*/",
                        "{\"a\"\x0b:1}",
                        "{\"a\":\x00}"})
    agree(std::string(t));
  // A NUL byte inside the document, not a terminator.
  agree(std::string("{\"a\":1}\0", 8));
  agree(std::string("{\"a\":\"x\0y\"}", 11));
}

TEST_CASE("json reader: a large object with repeated keys as nlohmann") {
  // Objects past 16 members find repeats by sorting; below, by comparing.
  std::string text = "{";
  for (int i = 0; i < 60; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i % 23) + "\":" + std::to_string(i);
  text += "}";
  agree(text);
  Json j = Spec::parse(text).json();
  REQUIRE(j.size() == 23);
  REQUIRE(j.begin().key() == "k0");
  REQUIRE(j["k0"] == 46);
  REQUIRE(j["k22"] == 45);
}

TEST_CASE("json reader: every golden config.json, and random damage to them, as nlohmann") {
  std::vector<std::string> inputs;
  for (const auto& e : std::filesystem::recursive_directory_iterator(SPECSHIM_TEST_DATA_DIR "/golden"))
    if (e.symlink_status().type() == std::filesystem::file_type::regular && e.path().extension() == ".json") {
      std::ifstream f(e.path());
      std::stringstream ss;
      ss << f.rdbuf();
      inputs.push_back(ss.str());
    }
  REQUIRE(inputs.size() > 20);
  std::mt19937 rng(15);
  static constexpr char kBytes[] = "{}[]\",:\\ \n0-1.eE+tfnu\x80\xc3\xe2\xf0\xff";
  for (const auto& in : inputs) {
    agree(in);
    for (int round = 0; round < 40; ++round) {
      std::string t = in;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !t.empty(); ++e) {
        std::size_t at = rng() % t.size();
        switch (rng() % 3) {
          case 0:
            t[at] = kBytes[rng() % (sizeof kBytes - 1)];
            break;
          case 1:
            t.erase(at, 1 + rng() % 4);
            break;
          default:
            t.insert(at, 1, kBytes[rng() % (sizeof kBytes - 1)]);
        }
      }
      agree(t);
    }
  }
}

TEST_CASE("json reader: nesting is bounded") {
  // nlohmann has no bound; the DOM's copy, comparison and the writer recurse
  // per level, so the reader stops at 512.
  auto nested = [](int depth) { return "{\"v\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}"; };
  REQUIRE_NOTHROW(Spec::parse(nested(512)));
  REQUIRE_THROWS_WITH(Spec::parse(nested(513)), Catch::Contains("nested deeper than 512 levels"));
}

TEST_CASE("json reader: errors name line, column and what was found") {
  auto error = [](const std::string& text) {
    try {
      Spec::parse(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error("{\n  \"a\": 1,\n  oops\n}") == "line 3, column 3: expected a member name in double quotes, found `o`");
  CHECK(error("{\"a\": tru}") == "line 1, column 10: expected `true`, found `}`");
  CHECK(error("{\"a\": [1,\n]}") == "line 2, column 1: expected a value, found `]`");
  CHECK(error("{\"a\": \"x\ty\"}") ==
        "line 1, column 9: a control character must be escaped in a string, found byte 0x09");
  CHECK(error("{\"a\": \"\xff\"}") == "line 1, column 8: invalid UTF-8 in a string, found byte 0xFF");
  CHECK(error("{\"a\": \"\xe2\x82x\"}") == "line 1, column 8: invalid UTF-8 in a string, found bytes 0xE2 0x82 0x78");
  CHECK(error("{\"a\": \"\xe2\x82") == "line 1, column 8: invalid UTF-8 in a string, found bytes 0xE2 0x82");
  CHECK(error("{\"a\": 1") == "line 1, column 8: expected `,` or `}`, found the end of the document");
  CHECK(error("{\"a\": 1e999}") == "line 1, column 7: number out of range of a double, found `1`");
  CHECK(error("{} {}") == "line 1, column 4: expected the end of the document, found `{`");
  CHECK(error("[1]") == "spec is not a JSON object");
}
