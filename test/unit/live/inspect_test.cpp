// SPDX-License-Identifier: Apache-2.0
// live/inspect.h: a process's ids, capabilities and memlock limit from
// /proc/PID/status and /proc/PID/limits text, the permission decision
// diagnose makes from them, and files below a root (a temp dir standing in
// for /proc/PID/root) looked at and read without leaving it.
#include "specshim/live/inspect.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "error_of.h"
#include "specshim/base/error.h"
#include "tempdir.h"

using namespace specshim;
using namespace specshim::live;
using Catch::Contains;
using specshim::test::error_of;
using specshim::test::TempDir;
using specshim::test::write_file;
namespace stdfs = std::filesystem;
using Kind = FileView::Kind;

namespace {

// kStatus is /proc/PID/status as the kernel writes it (tabs; Groups with a
// trailing space), with the four Uid/Gid columns all different.
constexpr const char* kStatus =
    "Name:\tsh\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nNgid:\t0\nPid:\t4242\nPPid:\t4200\n"
    "TracerPid:\t0\nUid:\t1000\t1001\t1002\t1003\nGid:\t2000\t2001\t2002\t2003\nFDSize:\t64\n"
    "Groups:\t10 20 30 \nNStgid:\t4242\t1\nVmPeak:\t    4472 kB\nThreads:\t1\n"
    "CapInh:\t0000000000000000\nCapPrm:\t00000000a80425fb\nCapEff:\t00000000a80425fb\n"
    "CapBnd:\t00000000a80425fb\nCapAmb:\t0000000000000000\nNoNewPrivs:\t0\n";

// kLimits is /proc/PID/limits with the columns the kernel pads.
constexpr const char* kLimits =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max open files            1048576              1048576              files     \n"
    "Max locked memory         65536                65536                bytes     \n"
    "Max address space         unlimited            unlimited            bytes     \n";

std::string replaced(std::string text, std::string_view from, std::string_view to) {
  return test::replace_all(std::move(text), from, to);
}

ProcessView process(std::uint32_t uid, std::uint32_t gid, std::vector<std::uint32_t> groups = {},
                    std::uint64_t caps = 0) {
  ProcessView v;
  v.uid = uid;
  v.gid = gid;
  v.groups = std::move(groups);
  v.cap_effective = caps;
  return v;
}

constexpr std::uint64_t kCapDacOverride = 1ull << 1;

bool is_root() {
  return ::geteuid() == 0;
}

// mknod_at makes a device node with this mode and owner (umask does not apply: chmod after).
void mknod_at(const stdfs::path& p, mode_t type, unsigned maj, unsigned min, mode_t mode, uid_t uid, gid_t gid) {
  stdfs::create_directories(p.parent_path());
  REQUIRE(::mknod(p.c_str(), type | 0600, ::makedev(maj, min)) == 0);
  REQUIRE(::chmod(p.c_str(), mode) == 0);
  REQUIRE(::chown(p.c_str(), uid, gid) == 0);
}

}  // namespace

// ---- parse_status ----

TEST_CASE("inspect: parse_status takes the fs column of Uid and Gid, Groups and CapEff") {
  ProcessView v = parse_status(kStatus, "/proc/4242/status");
  CHECK(v.uid == 1003);
  CHECK(v.gid == 2003);
  CHECK(v.groups == std::vector<std::uint32_t>{10, 20, 30});
  CHECK(v.cap_effective == 0xa80425fbull);
  CHECK(v.has_cap(0));         // CAP_CHOWN
  CHECK(v.has_cap(1));         // CAP_DAC_OVERRIDE
  CHECK_FALSE(v.has_cap(2));   // CAP_DAC_READ_SEARCH
  CHECK_FALSE(v.has_cap(14));  // CAP_IPC_LOCK
  CHECK_FALSE(v.has_cap(-1));
  CHECK_FALSE(v.has_cap(64));
  CHECK_FALSE(v.memlock_soft);  // parse_status leaves the limit alone
}

TEST_CASE("inspect: parse_status reads no groups, one group, and a full 64-bit CapEff") {
  std::string text = replaced(kStatus, "Groups:\t10 20 30 \n", "Groups:\t\n");
  CHECK(parse_status(text, "s").groups.empty());
  text = replaced(kStatus, "Groups:\t10 20 30 \n", "Groups:\n");
  CHECK(parse_status(text, "s").groups.empty());
  text = replaced(kStatus, "Groups:\t10 20 30 \n", "");  // no Groups line at all: none
  CHECK(parse_status(text, "s").groups.empty());
  text = replaced(kStatus, "Groups:\t10 20 30 \n", "Groups:\t4294967294 \n");
  CHECK(parse_status(text, "s").groups == std::vector<std::uint32_t>{4294967294u});
  text = replaced(kStatus, "CapEff:\t00000000a80425fb", "CapEff:\tffffffffffffffff");
  CHECK(parse_status(text, "s").cap_effective == ~0ull);
  CHECK(parse_status(text, "s").has_cap(63));
  text = replaced(kStatus, "CapEff:\t00000000a80425fb", "CapEff:\t0000000000000000");
  CHECK(parse_status(text, "s").cap_effective == 0);
  // Only the line that starts with the key counts: CapPrm and CapBnd are not CapEff.
  text = replaced(kStatus, "CapPrm:\t00000000a80425fb", "CapPrm:\t000001ffffffffff");
  CHECK(parse_status(text, "s").cap_effective == 0xa80425fbull);
}

TEST_CASE("inspect: parse_status names the file when a line it needs is missing or malformed") {
  const std::string what = "/proc/4242/status";
  auto error = [&](std::string_view from, std::string_view to) {
    std::string text = replaced(kStatus, from, to);
    return error_of<Error>([&] { parse_status(text, what); });
  };
  for (auto [from, to, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"Uid:\t1000\t1001\t1002\t1003\n", "", "Uid"},
           {"Uid:\t1000\t1001\t1002\t1003\n", "Uid:\t1000\t1001\t1002\n", "Uid"},
           {"Uid:\t1000\t1001\t1002\t1003\n", "Uid:\t1000\t1001\t1002\t1003\t1004\n", "Uid"},
           {"Uid:\t1000\t1001\t1002\t1003\n", "Uid:\t1000\t1001\t1002\tx\n", "Uid"},
           {"Uid:\t1000\t1001\t1002\t1003\n", "Uid:\t1000\t1001\t1002\t-1\n", "Uid"},
           {"Uid:\t1000\t1001\t1002\t1003\n", "Uid:\t1000\t1001\t1002\t4294967296\n", "Uid"},
           {"Gid:\t2000\t2001\t2002\t2003\n", "", "Gid"},
           {"Gid:\t2000\t2001\t2002\t2003\n", "Gid:\t2000\n", "Gid"},
           {"Groups:\t10 20 30 \n", "Groups:\t10 x 30 \n", "Groups"},
           {"CapEff:\t00000000a80425fb\n", "", "CapEff"},
           {"CapEff:\t00000000a80425fb\n", "CapEff:\t\n", "CapEff"},
           {"CapEff:\t00000000a80425fb\n", "CapEff:\t0000000g80425fb\n", "CapEff"},
           {"CapEff:\t00000000a80425fb\n", "CapEff:\t10000000000000000\n", "CapEff"},
       }) {
    CAPTURE(from, to);
    std::string message = error(from, to);
    CHECK_THAT(message, Contains(what));
    CHECK_THAT(message, Contains(says));
  }
  CHECK_THAT(error_of<Error>([&] { parse_status("", what); }), Contains(what));
}

// ---- parse_limits ----

TEST_CASE("inspect: parse_limits reads the soft Max locked memory, unlimited as none") {
  ProcessView v;
  parse_limits(kLimits, "/proc/4242/limits", v);
  REQUIRE(v.memlock_soft);
  CHECK(*v.memlock_soft == 65536);

  parse_limits("Max locked memory  65536  65536  bytes", "l", v);  // no newline at the end
  CHECK(v.memlock_soft == std::optional<std::uint64_t>(65536));

  parse_limits(replaced(kLimits, "65536                65536", "8388608              unlimited"), "l", v);
  CHECK(v.memlock_soft == std::optional<std::uint64_t>(8388608));  // the soft column, not the hard one

  v.memlock_soft = 1;
  parse_limits(replaced(kLimits, "65536                65536", "unlimited            unlimited"), "l", v);
  CHECK_FALSE(v.memlock_soft);
}

TEST_CASE("inspect: parse_limits names the file when the line is missing or malformed") {
  const std::string what = "/proc/4242/limits";
  ProcessView v;
  std::string no_line =
      replaced(kLimits, "Max locked memory         65536                65536                bytes     \n", "");
  CHECK_THAT(error_of<Error>([&] { parse_limits(no_line, what, v); }), Contains(what));
  CHECK_THAT(error_of<Error>([&] { parse_limits(no_line, what, v); }), Contains("Max locked memory"));
  CHECK_THAT(error_of<Error>([&] { parse_limits("", what, v); }), Contains(what));
  std::string bad = replaced(kLimits, "65536                65536", "lots                 65536");
  CHECK_THAT(error_of<Error>([&] { parse_limits(bad, what, v); }), Contains(what));
  CHECK_THAT(error_of<Error>([&] { parse_limits("Max locked memory\nMax address space 1 1 bytes\n", what, v); }),
             Contains(what));
}

// ---- may_open ----

TEST_CASE("inspect: may_open uses only the owner bits when the process's uid owns the file") {
  auto p = process(1000, 1000, {44});
  CHECK(may_open(p, 1000, 0, 0600, "rw"));
  CHECK(may_open(p, 1000, 0, 0400, "r"));
  CHECK_FALSE(may_open(p, 1000, 0, 0400, "w"));
  CHECK_FALSE(may_open(p, 1000, 0, 0400, "rw"));
  CHECK(may_open(p, 1000, 0, 0200, "w"));
  CHECK_FALSE(may_open(p, 1000, 0, 0200, "r"));
  // Group and other would allow it; the kernel still looks only at the owner's bits.
  CHECK_FALSE(may_open(p, 1000, 1000, 0066, "r"));
  CHECK_FALSE(may_open(p, 1000, 44, 0066, "rw"));
  CHECK_FALSE(may_open(p, 1000, 0, 0466, "rw"));
}

TEST_CASE("inspect: may_open uses the group bits for the process's gid or a supplementary group") {
  auto p = process(1000, 1000, {44, 45});
  CHECK(may_open(p, 0, 1000, 0060, "rw"));
  CHECK(may_open(p, 0, 44, 0060, "rw"));
  CHECK(may_open(p, 0, 45, 0040, "r"));
  CHECK_FALSE(may_open(p, 0, 45, 0040, "w"));
  CHECK_FALSE(may_open(p, 0, 45, 0040, "rw"));
  // A member gets the group bits even where other would allow more.
  CHECK_FALSE(may_open(p, 0, 44, 0606, "r"));
  CHECK_FALSE(may_open(process(1000, 44), 0, 44, 0606, "w"));
  // Not a member: other bits.
  CHECK_FALSE(may_open(p, 0, 46, 0660, "r"));
  CHECK(may_open(p, 0, 46, 0006, "rw"));
  CHECK(may_open(p, 0, 46, 0004, "r"));
  CHECK_FALSE(may_open(p, 0, 46, 0004, "rw"));
  CHECK(may_open(p, 0, 46, 0002, "w"));
  CHECK_FALSE(may_open(process(1000, 1000), 0, 44, 0060, "r"));  // no supplementary groups
}

TEST_CASE("inspect: may_open lets CAP_DAC_OVERRIDE through unless the owner is unmapped") {
  auto p = process(1000, 1000, {}, kCapDacOverride);
  CHECK(may_open(p, 0, 0, 0000, "rw"));
  CHECK(may_open(p, 1000, 0, 0000, "rw"));  // even against its own owner bits
  CHECK(may_open(p, 0, 0, 0000, "r"));
  CHECK(may_open(p, 0, 0, 0000, "w"));
  CHECK_FALSE(may_open(p, 0, 0, 0000, "r", false));
  CHECK_FALSE(may_open(p, 0, 0, 0600, "rw", false));
  CHECK(may_open(p, 0, 0, 0006, "rw", false));  // unmapped: the bits alone decide
  // Other capabilities (CAP_CHOWN, CAP_DAC_READ_SEARCH, CAP_SYS_ADMIN) are not DAC_OVERRIDE.
  CHECK_FALSE(may_open(process(1000, 1000, {}, 1ull << 0), 0, 0, 0600, "r"));
  CHECK_FALSE(may_open(process(1000, 1000, {}, 1ull << 2), 0, 0, 0600, "w"));
  CHECK_FALSE(may_open(process(1000, 1000, {}, 1ull << 21), 0, 0, 0600, "rw"));
}

// The kernel (generic_permission) also lets CAP_DAC_READ_SEARCH through for
// a read-only open of any file, under the same mapped-owner rule: a uid-1000
// process with CapEff 0000000000000004 reads a root 0600 file, and cannot
// write it (checked on this host with setpriv --ambient-caps +dac_read_search).
TEST_CASE("inspect: may_open lets CAP_DAC_READ_SEARCH read, and only read, as the kernel does") {
  auto p = process(1000, 1000, {}, 1ull << 2);
  CHECK(may_open(p, 0, 0, 0600, "r"));
  CHECK(may_open(p, 0, 0, 0000, "r"));
  CHECK_FALSE(may_open(p, 0, 0, 0600, "w"));
  CHECK_FALSE(may_open(p, 0, 0, 0600, "rw"));
  CHECK_FALSE(may_open(p, 0, 0, 0600, "r", false));  // unmapped owner: the capability does not count
  CHECK(may_open(p, 0, 0, 0604, "r", false));        // the bits still do
}

TEST_CASE("inspect: may_open of root without capabilities is decided by bits, like any uid") {
  auto root = process(0, 0);
  CHECK_FALSE(may_open(root, 0, 0, 0000, "r"));
  CHECK(may_open(root, 0, 0, 0600, "rw"));
  CHECK_FALSE(may_open(root, 1000, 1000, 0660, "r"));
}

// ---- look_at ----

TEST_CASE("inspect: look_at of a missing path, a regular file, a directory and the root itself") {
  TempDir root;
  write_file(root / "etc/target", "x", 0640);
  bool chowned = is_root() && ::chown((root / "etc/target").c_str(), 7, 8) == 0;

  FileView v = look_at(root.path(), "/nope");
  CHECK(v.kind == Kind::missing);
  CHECK_FALSE(v.symlink);
  CHECK(v.error.empty());
  CHECK(look_at(root.path(), "/nope/deeper").kind == Kind::missing);

  v = look_at(root.path(), "/etc/target");
  CHECK(v.kind == Kind::regular);
  CHECK_FALSE(v.symlink);
  CHECK_FALSE(v.is_device());
  CHECK(v.mode == 0640);
  CHECK(v.uid == (chowned ? 7u : ::geteuid()));
  CHECK(v.gid == (chowned ? 8u : ::getegid()));
  struct stat st {};
  REQUIRE(::stat((root / "etc/target").c_str(), &st) == 0);
  CHECK(v.dev == st.st_dev);

  v = look_at(root.path(), "/etc");
  CHECK(v.kind == Kind::directory);
  CHECK_FALSE(v.symlink);
  CHECK(look_at(root.path(), "/").kind == Kind::directory);

  // A regular file in the middle of the path: not there, with why.
  v = look_at(root.path(), "/etc/target/x");
  CHECK(v.kind == Kind::missing);
  CHECK_FALSE(v.error.empty());
}

TEST_CASE("inspect: look_at resolves symlinks inside the root, never on the host") {
  TempDir root;
  stdfs::create_directories(root / "dev");
  write_file(root / "etc/target", "in root", 0604);
  stdfs::create_symlink("/etc/target", root / "dev/link");        // absolute
  stdfs::create_symlink("../etc/target", root / "dev/relative");  // relative
  stdfs::create_symlink("/etc/hostname", root / "dev/host");      // the host has one, the root does not
  stdfs::create_symlink("/etc", root / "dev/dir");
  stdfs::create_symlink("/nowhere", root / "dev/dangling");
  stdfs::create_symlink("loop2", root / "dev/loop1");
  stdfs::create_symlink("loop1", root / "dev/loop2");
  REQUIRE(stdfs::exists("/etc/hostname"));

  FileView v = look_at(root.path(), "/dev/link");
  CHECK(v.kind == Kind::regular);
  CHECK(v.symlink);
  CHECK(v.mode == 0604);
  v = look_at(root.path(), "/dev/relative");
  CHECK(v.kind == Kind::regular);
  CHECK(v.symlink);
  CHECK(v.mode == 0604);

  v = look_at(root.path(), "/dev/host");
  CHECK(v.kind == Kind::dangling_symlink);
  CHECK(v.symlink);
  v = look_at(root.path(), "/dev/dangling");
  CHECK(v.kind == Kind::dangling_symlink);
  CHECK(v.symlink);
  CHECK(v.error.empty());

  v = look_at(root.path(), "/dev/dir");
  CHECK(v.kind == Kind::directory);
  CHECK(v.symlink);
  // Through a symlinked directory to a file: the last component is no symlink.
  v = look_at(root.path(), "/dev/dir/target");
  CHECK(v.kind == Kind::regular);
  CHECK_FALSE(v.symlink);

  v = look_at(root.path(), "/dev/loop1");
  CHECK(v.kind == Kind::missing);
  CHECK(v.symlink);
  CHECK_FALSE(v.error.empty());  // ELOOP, said
}

TEST_CASE("inspect: look_at keeps `..` inside the root") {
  TempDir root;
  stdfs::create_directories(root / "a");
  // The root has no /etc/passwd: climbing out would find the host's.
  REQUIRE(stdfs::exists("/etc/passwd"));
  CHECK(look_at(root.path(), "/a/../../etc/passwd").kind == Kind::missing);
  CHECK(look_at(root.path(), "/../../../etc/passwd").kind == Kind::missing);
  stdfs::create_symlink("../../../../../etc/passwd", root / "a/up");
  CHECK(look_at(root.path(), "/a/up").kind == Kind::dangling_symlink);

  write_file(root / "etc/passwd", "root:x:0:0::/:/bin/sh\n", 0604);  // the host's is 0644
  FileView v = look_at(root.path(), "/a/../../etc/passwd");
  CHECK(v.kind == Kind::regular);
  CHECK(v.mode == 0604);
  v = look_at(root.path(), "/a/up");
  CHECK(v.kind == Kind::regular);
  CHECK(v.symlink);
  CHECK(v.mode == 0604);
}

TEST_CASE("inspect: look_at describes device nodes by numbers, mode and owner, without opening them") {
  if (!is_root()) return;  // mknod and chown need root (CI runs as root)
  TempDir root;
  mknod_at(root / "dev/null", S_IFCHR, 1, 3, 0620, 5, 6);
  mknod_at(root / "dev/loop7", S_IFBLK, 7, 7, 0660, 0, 6);
  // A node whose driver is absent: opening it would fail with ENXIO, fstat of O_PATH does not.
  mknod_at(root / "dev/nvidia0", S_IFCHR, 195, 0, 0666, 0, 0);
  stdfs::create_symlink("/dev/nvidia0", root / "dev/gpu");

  FileView v = look_at(root.path(), "/dev/null");
  CHECK(v.kind == Kind::char_device);
  CHECK(v.is_device());
  CHECK(v.type() == 'c');
  CHECK(v.major == 1);
  CHECK(v.minor == 3);
  CHECK(v.mode == 0620);
  CHECK(v.uid == 5);
  CHECK(v.gid == 6);
  CHECK_FALSE(v.symlink);

  v = look_at(root.path(), "/dev/loop7");
  CHECK(v.kind == Kind::block_device);
  CHECK(v.type() == 'b');
  CHECK(v.major == 7);
  CHECK(v.minor == 7);
  CHECK(v.mode == 0660);

  v = look_at(root.path(), "/dev/gpu");
  CHECK(v.kind == Kind::char_device);
  CHECK(v.symlink);
  CHECK(v.major == 195);
  CHECK(v.minor == 0);
}

TEST_CASE("inspect: look_at of a FIFO is `other`, and does not block") {
  TempDir root;
  stdfs::create_directories(root / "run");
  REQUIRE(::mkfifo((root / "run/fifo").c_str(), 0600) == 0);
  FileView v = look_at(root.path(), "/run/fifo");
  CHECK(v.kind == Kind::other);
  CHECK_FALSE(v.is_device());
}

TEST_CASE("inspect: kind_name says what was found") {
  CHECK(kind_name(Kind::missing) == "missing");
  CHECK(kind_name(Kind::dangling_symlink) == "a dangling symlink");
  CHECK(kind_name(Kind::char_device) == "a character device");
  CHECK(kind_name(Kind::block_device) == "a block device");
  CHECK(kind_name(Kind::regular) == "a regular file");
  CHECK(kind_name(Kind::directory) == "a directory");
  CHECK(kind_name(Kind::other) == "a FIFO or socket");
}

// ---- read_in_root, list_in_root ----

TEST_CASE("inspect: read_in_root reads a regular file inside the root, through its symlinks") {
  TempDir root;
  write_file(root / "etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  stdfs::create_symlink("/etc/ld.so.conf", root / "etc/link");
  CHECK(read_in_root(root.path(), "/etc/ld.so.conf", 1 << 20) == "include /etc/ld.so.conf.d/*.conf\n");
  CHECK(read_in_root(root.path(), "/etc/link", 1 << 20) == "include /etc/ld.so.conf.d/*.conf\n");
  CHECK(read_in_root(root.path(), "etc/ld.so.conf", 1 << 20) == "include /etc/ld.so.conf.d/*.conf\n");
  write_file(root / "empty", "");
  CHECK(read_in_root(root.path(), "/empty", 16) == "");
}

TEST_CASE("inspect: read_in_root is nullopt for a missing file, also one only the host has") {
  TempDir root;
  CHECK_FALSE(read_in_root(root.path(), "/nope", 16));
  CHECK_FALSE(read_in_root(root.path(), "/etc/passwd", 1 << 20));
  stdfs::create_symlink("/etc/passwd", root / "link");
  CHECK_FALSE(read_in_root(root.path(), "/link", 1 << 20));
  stdfs::create_directories(root / "a");
  CHECK_FALSE(read_in_root(root.path(), "/a/../../etc/passwd", 1 << 20));
}

TEST_CASE("inspect: read_in_root refuses a FIFO, a directory, a device node and a file over the limit") {
  TempDir root;
  stdfs::create_directories(root / "run");
  REQUIRE(::mkfifo((root / "run/fifo").c_str(), 0600) == 0);
  CHECK_THAT(error_of<Error>([&] { read_in_root(root.path(), "/run/fifo", 1 << 20); }), Contains("not a regular file"));
  CHECK_THAT(error_of<Error>([&] { read_in_root(root.path(), "/run", 1 << 20); }), Contains("not a regular file"));
  write_file(root / "big", std::string(100, 'x'));
  CHECK_THROWS_AS(read_in_root(root.path(), "/big", 99), Error);
  CHECK(read_in_root(root.path(), "/big", 100)->size() == 100);
  if (is_root()) {
    mknod_at(root / "dev/zero", S_IFCHR, 1, 5, 0666, 0, 0);
    CHECK_THAT(error_of<Error>([&] { read_in_root(root.path(), "/dev/zero", 1 << 20); }),
               Contains("not a regular file"));
  }
}

TEST_CASE("inspect: list_in_root lists a directory's names, nothing for what is not one") {
  TempDir root;
  write_file(root / "dev/dri/renderD128", "");
  write_file(root / "dev/dri/card0", "");
  stdfs::create_directories(root / "dev/dri/by-path");
  stdfs::create_symlink("/dev/dri", root / "dri-link");

  auto names = list_in_root(root.path(), "/dev/dri");
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"by-path", "card0", "renderD128"});  // no "." or ".."
  names = list_in_root(root.path(), "/dri-link");
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"by-path", "card0", "renderD128"});
  CHECK(list_in_root(root.path(), "/dev/dri/by-path").empty());
  CHECK(list_in_root(root.path(), "/nope").empty());
  CHECK(list_in_root(root.path(), "/dev/dri/card0").empty());  // a file
  // The root has no /etc: the host's is never listed.
  CHECK(list_in_root(root.path(), "/etc").empty());
  CHECK(list_in_root(root.path(), "/dev/../../../etc").size() == 0);
  auto top = list_in_root(root.path(), "/");
  std::sort(top.begin(), top.end());
  CHECK(top == std::vector<std::string>{"dev", "dri-link"});
}
