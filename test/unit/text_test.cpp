// SPDX-License-Identifier: Apache-2.0
// specshim/text.h: trimming and comma lists, as the readers of /proc files,
// a runtime's stderr and tenant lists use them.
#include "specshim/text.h"

#include <catch2/catch.hpp>

using specshim::split_list;
using specshim::trim;
using specshim::trim_end;

TEST_CASE("text: trim drops only the characters it is given, from the ends it is given") {
  CHECK(trim("  a b \t", " \t") == "a b");
  CHECK(trim("\n a \n", " ") == "\n a \n");
  CHECK(trim("\t a\t\n", " \t", " \t\n") == "a");
  CHECK(trim("\n a\t\n", " \t", " \t\n") == "\n a");  // a newline in front stays
  CHECK(trim("   ", " ").empty());
  CHECK(trim("", " ").empty());
  CHECK(trim_end(" msg\r\n \n", "\n \r") == " msg");
}

TEST_CASE("text: split_list trims each item, drops empty ones and points into the value") {
  std::string_view value = " GPU-1 ,, GPU-2,\t,GPU-3 ";
  auto items = split_list(value, " \t");
  REQUIRE(items == std::vector<std::string_view>{"GPU-1", "GPU-2", "GPU-3"});
  CHECK(items[0].data() == value.data() + 1);
  CHECK(split_list(" , ", " ").empty());
  CHECK(split_list("a", " ") == std::vector<std::string_view>{"a"});
}
