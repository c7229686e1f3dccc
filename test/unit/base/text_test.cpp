// SPDX-License-Identifier: Apache-2.0
// specshim/base/text.h: trimming and comma lists, as the readers of /proc files,
// a runtime's stderr and tenant lists use them; json_plain_run, the scan of
// every JSON string specshim reads or writes.
#include "specshim/base/text.h"

#include <catch2/catch.hpp>
#include <string>

using specshim::json_plain_run;
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

TEST_CASE("text: json_plain_run stops at the first byte a JSON string cannot hold as it is") {
  // Every byte value, at every place in and around a 16-byte block, after
  // plain bytes: the run ends there exactly when the byte is '"', '\\',
  // a control character or past ASCII.
  for (int c = 0; c < 256; ++c) {
    bool special = c < 0x20 || c >= 0x80 || c == '"' || c == '\\';
    for (std::size_t at = 0; at < 40; ++at) {
      std::string s(40, 'a');
      s[at] = static_cast<char>(c);
      INFO("byte " << c << " at " << at);
      CHECK(json_plain_run(s) == (special ? at : s.size()));
      CHECK(json_plain_run(std::string_view(s).substr(0, at)) == at);  // the end is never read past
    }
  }
  CHECK(json_plain_run("") == 0);
  CHECK(json_plain_run("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.95.05\"") == 51);
}
