// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/fs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "specshim/base/error.h"
#include "tempdir.h"

using namespace specshim;
using specshim::test::TempDir;

namespace {

// entries lists a directory's names, sorted.
std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

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
  auto temp = GENERATE(fs::TempFile::unnamed, fs::TempFile::named);
  TempDir d;
  test::write_file(d / "config.json", "old");
  fs::write_file_atomic(d.path(), "config.json", "new", 0600, temp);
  REQUIRE(test::read_file(d / "config.json") == "new");
  struct stat st {};
  REQUIRE(::stat((d / "config.json").c_str(), &st) == 0);
  REQUIRE((st.st_mode & 07777) == 0600);
  REQUIRE(entries(d.path()) == std::vector<std::string>{"config.json"});
}

TEST_CASE("write_file_atomic creates a new file with its mode whatever the umask") {
  auto temp = GENERATE(fs::TempFile::unnamed, fs::TempFile::named);
  TempDir d;
  mode_t old_umask = ::umask(077);
  fs::write_file_atomic(d.path(), "specshim-passwd", "root:x:0:0::/:/bin/sh\n", 0644, temp);
  ::umask(old_umask);
  REQUIRE(test::read_file(d / "specshim-passwd") == "root:x:0:0::/:/bin/sh\n");
  struct stat st {};
  REQUIRE(::stat((d / "specshim-passwd").c_str(), &st) == 0);
  REQUIRE((st.st_mode & 07777) == 0644);
  REQUIRE(entries(d.path()) == std::vector<std::string>{"specshim-passwd"});
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

TEST_CASE("temp_file_owner knows exactly write_file_atomic's temp names") {
  CHECK(fs::temp_file_owner(".config.json.specshim-123-4567.tmp") == 123);
  CHECK(fs::temp_file_owner(".specshim-group.specshim-4194304-16777215.tmp") == 4194304);
  CHECK(fs::temp_file_owner(".a.specshim-1-0.tmp") == 1);
  CHECK(fs::temp_file_owner(".x.specshim-9.specshim-2-3.tmp") == 2);  // the last mark counts
  for (const char* other : {
           "config.json.specshim-1-2.tmp",       // no leading dot
           ".config.json.specshim-1-2.tmp.bak",  // more after .tmp
           ".config.json.specshim-1-2.TMP",
           ".specshim-1-2.tmp",               // no name
           "..config.json.specshim-1-2.tmp",  // bundle file names never start with a dot
           ".config.json.specshim-0-2.tmp",   // pid 0 would be kill()'s process group
           ".config.json.specshim-01-2.tmp",  // leading zero
           ".config.json.specshim--2.tmp",
           ".config.json.specshim-1-.tmp",
           ".config.json.specshim-1-2-3.tmp",
           ".config.json.specshim-1-02.tmp",
           ".config.json.specshim-a-2.tmp",
           ".config.json.specshim-1-123456789.tmp",  // random is at most 0xffffff
           ".config.json.specshim-12345678901-2.tmp",
           ".config.json.specshim-3000000000-2.tmp",  // not a pid_t
           ".config.json.specshim+1-2.tmp",
           ".config.json.tmp",
           "config.json",
           ".",
           "..",
       }) {
    INFO(other);
    CHECK_FALSE(fs::temp_file_owner(other));
  }
}

TEST_CASE("remove_stale_temps removes dead writers' and its own temp files, nothing else") {
  TempDir d;
  TempDir outside;
  // Above any pid_max (at most 2^22): kill() says ESRCH.
  const std::string dead = ".config.json.specshim-99999999-1.tmp";
  const std::string own = ".specshim-passwd.specshim-" + std::to_string(::getpid()) + "-2.tmp";
  const std::string live = ".config.json.specshim-1-3.tmp";  // init: alive
  test::write_file(d / "config.json", "{}");
  test::write_file(d / dead, "whole or partial");
  test::write_file(d / own, "x");
  test::write_file(d / live, "in flight");
  test::write_file(d / (dead + ".bak"), "not ours");
  test::write_file(d / "config.json.specshim-99999999-1.tmp", "not ours");
  test::write_file(outside / "target", "keep");
  std::filesystem::create_symlink(outside / "target", d / ".a.specshim-99999999-4.tmp");
  std::filesystem::create_directory(d / ".b.specshim-99999999-5.tmp");
  REQUIRE(::mkfifo((d / ".c.specshim-99999999-6.tmp").c_str(), 0600) == 0);
  auto before = entries(d.path());

  auto removed = fs::remove_stale_temps(d.path());
  std::sort(removed.begin(), removed.end());
  REQUIRE(removed == std::vector<std::string>{dead, own});
  auto left = entries(d.path());
  REQUIRE(left.size() == before.size() - 2);
  for (const auto& name : left) REQUIRE(name != dead);
  REQUIRE(test::read_file(outside / "target") == "keep");
  REQUIRE(std::filesystem::is_symlink(d / ".a.specshim-99999999-4.tmp"));
  REQUIRE(test::read_file(d / live) == "in flight");

  REQUIRE(fs::remove_stale_temps(d.path()).empty());
  REQUIRE_THROWS_WITH(fs::remove_stale_temps(d / "missing"), Catch::StartsWith("open bundle directory `"));
}
