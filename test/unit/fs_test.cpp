// SPDX-License-Identifier: Apache-2.0
#include "specshim/fs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "specshim/error.h"
#include "tempdir.h"

using namespace specshim;
using specshim::test::TempDir;

TEST_CASE("read_regular_file enforces the cap and the file type") {
  TempDir d;
  test::write_file(d / "f", "hello");
  REQUIRE(fs::read_regular_file(d / "f", 5) == "hello");
  REQUIRE_THROWS_WITH(fs::read_regular_file(d / "f", 4), Catch::Contains("the limit is 4"));
  REQUIRE_THROWS_WITH(fs::read_regular_file(d.path(), 100), Catch::Contains("not a regular file"));
  REQUIRE_THROWS_WITH(fs::read_regular_file(d / "missing", 100), Catch::Contains("No such file"));
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  REQUIRE_THROWS_WITH(fs::read_regular_file(d / "fifo", 100), Catch::Contains("not a regular file"));
}

TEST_CASE("write_file_atomic replaces the file, keeps the mode, leaves no temp file") {
  TempDir d;
  test::write_file(d / "config.json", "old");
  fs::write_file_atomic(d.path(), "config.json", "new", 0600);
  REQUIRE(test::read_file(d / "config.json") == "new");
  struct stat st {};
  REQUIRE(::stat((d / "config.json").c_str(), &st) == 0);
  REQUIRE((st.st_mode & 07777) == 0600);
  int entries = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(d.path())) ++entries;
  REQUIRE(entries == 1);
}

TEST_CASE("write_file_atomic failure leaves the target untouched") {
  if (::geteuid() == 0) {
    // root ignores directory permissions; use a missing directory instead.
    REQUIRE_THROWS_AS(fs::write_file_atomic("/nonexistent-dir", "config.json", "x", 0644), Error);
    return;
  }
  TempDir d;
  test::write_file(d / "config.json", "old");
  ::chmod(d.path().c_str(), 0500);
  REQUIRE_THROWS_AS(fs::write_file_atomic(d.path(), "config.json", "new", 0644), Error);
  ::chmod(d.path().c_str(), 0700);
  REQUIRE(test::read_file(d / "config.json") == "old");
}
