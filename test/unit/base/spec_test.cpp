// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/spec.h"

#include <catch2/catch.hpp>
#include <utility>

#include "specshim/base/error.h"

using specshim::Error;
using specshim::Json;
using specshim::Spec;

TEST_CASE("spec round-trips compact input byte for byte") {
  std::string in = R"({"ociVersion":"1.0.2","zeta":1,"alpha":{"x":[1,2,{}],"y":[]},"s":"a\"b\\c\u0001é"})";
  REQUIRE(Spec::parse(in).serialize() == in);
}

TEST_CASE("spec keeps key order, unknown fields and indentation") {
  std::string in = "{\n    \"z\": {\n        \"custom\": true\n    },\n    \"a\": [\n        null\n    ]\n}\n";
  Spec s = Spec::parse(in);
  REQUIRE(s.serialize() == in);
  s.json()["b"] = 1;
  REQUIRE(s.serialize() ==
          "{\n    \"z\": {\n        \"custom\": true\n    },\n    \"a\": [\n        null\n    ],\n    \"b\": 1\n}\n");
}

TEST_CASE("spec keeps number forms that would not print back the same") {
  std::string in = R"({"a":1.50,"b":1e3,"c":-0.0,"d":18446744073709551616,"e":[2.50E+1],"f":0.5,"g":-12})";
  Spec s = Spec::parse(in);
  REQUIRE(s.serialize() == in);
  // A changed value is written canonically; untouched neighbours keep their text.
  s.json()["a"] = 2.25;
  REQUIRE(s.serialize() == R"({"a":2.25,"b":1e3,"c":-0.0,"d":18446744073709551616,"e":[2.50E+1],"f":0.5,"g":-12})");
  // Nested: each number is found by its whole path, objects deeper than one level included.
  std::string nested = R"({"x":{"y":[{"z":1.50,"q":{"r":2.0e1}}],"k":3.10},"w":4.00,"x2":{"y":{"z":5.0}}})";
  REQUIRE(Spec::parse(nested).serialize() == nested);
}

TEST_CASE("spec parse errors name line and column") {
  try {
    Spec::parse("{\n  \"a\": 1,\n  oops\n}");
    FAIL("no error");
  } catch (const Error& e) {
    REQUIRE_THAT(e.what(), Catch::Contains("line 3"));
  }
}

TEST_CASE("spec rejects non-objects, invalid UTF-8 and trailing garbage") {
  REQUIRE_THROWS_AS(Spec::parse("[]"), Error);
  REQUIRE_THROWS_AS(Spec::parse("{\"a\":\"\xff\"}"), Error);
  REQUIRE_THROWS_AS(Spec::parse("{} {}"), Error);
  REQUIRE_THROWS_AS(Spec::parse(""), Error);
}

TEST_CASE("spec writes strings, keys and scalars exactly as nlohmann's dump()") {
  // The writer escapes ASCII itself; this pins it to the serializer it replaced.
  Spec s = Spec::parse("{}");
  for (int c = 0; c < 0x80; ++c) {
    std::string v = std::string("a") + static_cast<char>(c) + "z";
    s.json()[v] = v;
  }
  s.json()["utf8 é ✓ 𝄞"] = "é ✓ 𝄞";
  s.json()["escapes \"\n before é"] = "tab\t quote\" then ✓";  // escaped, then handed to dump()
  s.json()["numbers"] = Json::array({0, -1, std::int64_t{INT64_MIN}, std::uint64_t{UINT64_MAX}, 2.5});
  s.json()["scalars"] = Json::array({true, false, nullptr, Json::object(), Json::array()});
  REQUIRE(s.serialize() == s.json().dump());

  s.json()["bad"] = std::string("\xff");
  REQUIRE_THROWS_WITH(s.serialize(), Catch::Contains("serialize"));
}

TEST_CASE("spec repeated keys: last value wins, first position kept (as Go)") {
  Spec s = Spec::parse(R"({"a":1,"b":2,"a":3})");
  REQUIRE(s.serialize() == R"({"a":3,"b":2})");
}

TEST_CASE("spec typed accessors create on demand and refuse wrong types") {
  Spec s = Spec::parse(R"({"linux":{"devices":"bad"}})");
  s.object_at({"linux", "resources"})["x"] = 1;
  REQUIRE(s.json()["linux"]["resources"]["x"] == 1);
  REQUIRE_THROWS_WITH(s.array_at({"linux", "devices"}), Catch::Contains("linux.devices"));
  REQUIRE(s.find({"linux", "nope"}) == nullptr);
  REQUIRE(s.annotation("x") == std::nullopt);
}

TEST_CASE("spec watch: a copy only on the first non-const access") {
  Spec s = Spec::parse(R"({"a":1,"b":[2]})");
  SECTION("reads through const access copy nothing") {
    s.watch();
    REQUIRE(std::as_const(s).json()["a"] == 1);
    REQUIRE(s.find({"b"}) != nullptr);
    REQUIRE(s.annotation("x") == std::nullopt);
    REQUIRE_FALSE(s.watched());
  }
  SECTION("each non-const accessor copies the document as it was, once") {
    for (int which = 0; which < 3; ++which) {
      Spec t = s;
      t.watch();
      if (which == 0) t.json()["a"] = 5;
      if (which == 1) t.object_at({"c"})["d"] = true;
      if (which == 2) t.array_at({"b"}).push_back(3);
      t.json()["e"] = "later";  // a second access keeps the first copy
      auto before = t.watched();
      REQUIRE(before);
      REQUIRE(*before == Json::parse(R"({"a":1,"b":[2]})"));
      REQUIRE_FALSE(t.watched());
    }
  }
  SECTION("outside a watch nothing is copied") {
    s.json()["a"] = 2;
    s.watch();
    REQUIRE_FALSE(s.watched());
  }
}
