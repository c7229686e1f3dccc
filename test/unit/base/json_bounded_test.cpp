// SPDX-License-Identifier: Apache-2.0
// JSON from outside specshim read and shown within bounds (spec.h):
// check_json_depth, parse_json and shown_json, on text and values nested far
// deeper than nlohmann's recursive dump, copy or comparison could take.
#include <catch2/catch.hpp>
#include <string>

#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/base/spec.h"

using namespace specshim;
using specshim::test::error_of;

namespace {

std::string nested(std::size_t depth, std::string_view inner = "") {
  return std::string(depth, '[') + std::string(inner) + std::string(depth, ']');
}

// deep_value builds a list nested depth levels without recursing (nlohmann
// 3.11 destroys a value without recursing too).
Json deep_value(std::size_t depth) {
  Json j = Json::array();
  for (std::size_t i = 1; i < depth; ++i) {
    Json outer = Json::array();
    outer.push_back(std::move(j));
    j = std::move(outer);
  }
  return j;
}

// cut_brackets is what shown_json shows of a deep list after head: n of its
// brackets and the cut's mark.
std::string cut_brackets(std::string head, std::size_t n) {
  head.append(n, '[');
  head.append("...");
  return head;
}

}  // namespace

TEST_CASE("check_json_depth: 512 levels pass, 513 are refused with what it reads") {
  CHECK_NOTHROW(check_json_depth(nested(kMaxJsonDepth), "annotation `a`"));
  CHECK(error_of<Error>([] { check_json_depth(nested(kMaxJsonDepth + 1), "annotation `a`"); }) ==
        "annotation `a`: nested deeper than 512 levels");
  CHECK(error_of<Error>([] { check_json_depth("{\"a\": [{}]}", "", 2); }) == "nested deeper than 2 levels");
  CHECK_NOTHROW(check_json_depth("[{}, {}, [], {\"a\": 1}, [2]]", "", 2));  // siblings are not deeper
}

TEST_CASE("check_json_depth: brackets inside strings, escaped quotes included, do not count") {
  CHECK_NOTHROW(check_json_depth("[\"" + std::string(1000, '[') + "\"]", "", 1));
  CHECK_NOTHROW(check_json_depth(R"(["a\"[[[", "b\\", "{{"])", "", 1));
  CHECK_THROWS_AS(check_json_depth(R"(["a\\", [[]]])", "", 2), Error);  // an escaped backslash escapes no quote
  CHECK_NOTHROW(check_json_depth("]]]][", "", 1));                      // strays are the parser's to refuse
}

TEST_CASE("parse_json: a 60,000-deep list is refused before it is parsed, other text as nlohmann reads it") {
  const std::string deep = nested(60000);
  CHECK(error_of<Error>([&] { parse_json(deep, "annotation `nvidia.com/gpu`"); }) ==
        "annotation `nvidia.com/gpu`: nested deeper than 512 levels");
  CHECK(error_of<Error>([&] { parse_json(deep, "x", false); }) == "x: nested deeper than 512 levels");

  CHECK(parse_json(R"({"b": 1, "a": [true, null]})", "x") == Json{{"b", 1}, {"a", {true, nullptr}}});
  CHECK(parse_json(nested(kMaxJsonDepth), "x").is_array());
  CHECK_THAT(error_of<Error>([] { parse_json("[1,", "parse `f`"); }),
             Catch::StartsWith("parse `f`: parse error at line 1, column 4: syntax error"));
  CHECK(parse_json("[1,", "x", false).is_discarded());
}

TEST_CASE("shown_json: strings as shown(), other values compact, cut to max bytes on a character") {
  CHECK(shown_json(Json("a\nb")) == "\"a\\nb\"");
  CHECK(shown_json(Json{{"k", {1, "v"}}}) == R"({"k":[1,"v"]})");
  CHECK(shown_json(Json(3)) == "3");
  CHECK(shown_json(Json::array({std::string(200, 'x')})).size() == 120);
  CHECK(shown_json(Json::array({std::string(200, 'x')}), 10) == "[\"xxxxx...");
  // Byte 7 is inside an é: the cut moves before it.
  CHECK(shown_json(Json("aaaaa\xc3\xa9\xc3\xa9\xc3\xa9"), 10) == "\"aaaaa...");
  CHECK(shown_json(Json("ab\xff")) == "\"ab\xef\xbf\xbd\"");  // invalid UTF-8 replaced, never thrown
}

TEST_CASE("shown_json: a value 60,000 levels deep is shown by its first 117 bytes") {
  Json deep = deep_value(60000);
  CHECK(shown_json(deep) == cut_brackets("", 117));
  Json object = {{"a", deep_value(60000)}};
  CHECK(shown_json(object, 20) == cut_brackets("{\"a\":", 12));
}
