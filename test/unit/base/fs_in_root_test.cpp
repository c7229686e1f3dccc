// SPDX-License-Identifier: Apache-2.0
// fs::open_in_root / fs::read_file_in_root: every way an image can try to
// make the host-root shim read a host file, or block it, with both resolvers
// (openat2 and the userspace walk used where the kernel lacks openat2).
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "tempdir.h"

using namespace specshim;
using specshim::test::TempDir;
namespace stdfs = std::filesystem;

namespace {

// HostAndRoot is a temp dir holding a rootfs and, beside it, a host file
// with a uid-10001 line: reading it would be the bug.
struct HostAndRoot {
  TempDir dir;
  stdfs::path root = dir / "rootfs";
  stdfs::path host_file = dir / "host" / "passwd";
  HostAndRoot() {
    test::write_file(host_file, "HOSTSECRET:x:0:0::/:/bin/sh\nhostuser:x:10001:10001::/:/bin/sh\n");
    stdfs::create_directories(root / "etc");
  }
  void link(const stdfs::path& target, const std::string& at) const { stdfs::create_symlink(target, root / at); }
};

fs::Resolve resolver() {
  auto how = GENERATE(fs::Resolve::automatic, fs::Resolve::userspace);
  INFO((how == fs::Resolve::automatic ? "openat2" : "userspace walk"));
  return how;
}

std::optional<std::string> read(const HostAndRoot& t, fs::Resolve how, std::size_t cap = 1 << 20) {
  auto f = fs::read_file_in_root(t.root, "etc/passwd", cap, how);
  if (!f) return std::nullopt;
  return f->content;
}

}  // namespace

TEST_CASE("in-root read: a plain file is read, a missing one is nullopt") {
  auto how = resolver();
  HostAndRoot t;
  REQUIRE_FALSE(read(t, how));
  test::write_file(t.root / "etc/passwd", "root:x:0:0::/:/bin/sh\n");
  REQUIRE(read(t, how) == "root:x:0:0::/:/bin/sh\n");
  REQUIRE(fs::read_file_in_root(t.root, "/etc/passwd", 100, how)->content == "root:x:0:0::/:/bin/sh\n");
}

TEST_CASE("in-root read: symlinks that point out of the root resolve inside it") {
  auto how = resolver();
  HostAndRoot t;
  SECTION("relative ../../.. escape") {
    t.link("../../../../../../../../../../.." + t.host_file.string(), "etc/passwd");
    REQUIRE_FALSE(read(t, how));
  }
  SECTION("relative escape by exactly one level") {
    t.link("../../host/passwd", "etc/passwd");
    REQUIRE_FALSE(read(t, how));
  }
  SECTION("absolute link to the host file") {
    t.link(t.host_file, "etc/passwd");
    REQUIRE_FALSE(read(t, how));
  }
  SECTION("/etc itself an absolute link to the host directory") {
    stdfs::remove(t.root / "etc");
    t.link(t.host_file.parent_path(), "etc");
    REQUIRE_FALSE(read(t, how));
  }
  SECTION("/etc itself a relative link to the host directory") {
    stdfs::remove(t.root / "etc");
    t.link("../host", "etc");
    REQUIRE_FALSE(read(t, how));
  }
  SECTION("a magic link through /proc") {
    t.link("/proc/self/root" + t.host_file.string(), "etc/passwd");
    REQUIRE_FALSE(read(t, how));
  }
  // Whatever happened, the host file is untouched.
  REQUIRE(test::read_file(t.host_file).find("hostuser") != std::string::npos);
}

TEST_CASE("in-root read: links inside the root are followed, .. is clamped at the root") {
  auto how = resolver();
  HostAndRoot t;
  SECTION("absolute in-root link (NixOS style)") {
    test::write_file(t.root / "nix/store/x/passwd", "nix\n");
    t.link("/nix/store/x/passwd", "etc/passwd");
    REQUIRE(read(t, how) == "nix\n");
  }
  SECTION("../../../etc/passwd.real") {
    test::write_file(t.root / "etc/passwd.real", "real\n");
    t.link("../../../etc/passwd.real", "etc/passwd");
    REQUIRE(read(t, how) == "real\n");
  }
  SECTION("a chain of links") {
    test::write_file(t.root / "usr/share/base/passwd", "base\n");
    t.link("../usr/share/base", "base");
    t.link("/base/passwd", "etc/passwd");
    REQUIRE(read(t, how) == "base\n");
  }
}

TEST_CASE("in-root read: loops and non-directories are errors, not 'missing'") {
  auto how = resolver();
  HostAndRoot t;
  SECTION("loop") {
    t.link("passwd2", "etc/passwd");
    t.link("passwd", "etc/passwd2");
    REQUIRE_THROWS_WITH(read(t, how), Catch::Contains("Too many levels of symbolic links"));
  }
  SECTION("/etc is a regular file") {
    stdfs::remove(t.root / "etc");
    test::write_file(t.root / "etc", "x");
    REQUIRE_THROWS_WITH(read(t, how), Catch::Contains("Not a directory"));
  }
  SECTION("missing root") {
    REQUIRE_THROWS_AS(fs::read_file_in_root(t.dir / "nope", "etc/passwd", 10, how), Error);
    REQUIRE_THROWS_WITH(fs::read_file_in_root(t.dir / "nope", "etc/passwd", 10, how), Catch::Contains("open root"));
  }
}

TEST_CASE("in-root read: only regular files are opened for reading") {
  auto how = resolver();
  HostAndRoot t;
  stdfs::path p = t.root / "etc/passwd";
  SECTION("FIFO with no writer does not block") {
    REQUIRE(::mkfifo(p.c_str(), 0644) == 0);
    ::alarm(10);  // a blocking open would kill the test here instead of hanging it
    REQUIRE_THROWS_WITH(read(t, how), Catch::Contains("not a regular file (fifo)"));
    ::alarm(0);
  }
  SECTION("character device") {
    REQUIRE(::mknod(p.c_str(), S_IFCHR | 0644, makedev(1, 3)) == 0);
    REQUIRE_THROWS_WITH(read(t, how), Catch::Contains("not a regular file (character device)"));
  }
  SECTION("directory") {
    stdfs::create_directories(p);
    REQUIRE_THROWS_WITH(read(t, how), Catch::Contains("not a regular file (directory)"));
  }
  SECTION("socket") {
    int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(p.string().size() < sizeof addr.sun_path);
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", p.c_str());
    REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    ::close(s);
    REQUIRE_THROWS_WITH(read(t, how), Catch::Contains("not a regular file (socket)"));
  }
  SECTION("the O_PATH descriptor of a FIFO is usable for fstat") {
    REQUIRE(::mkfifo(p.c_str(), 0644) == 0);
    fs::Fd fd = fs::open_in_root(t.root, "etc/passwd", how);
    struct stat st {};
    REQUIRE(::fstat(fd.get(), &st) == 0);
    REQUIRE(S_ISFIFO(st.st_mode));
  }
}

TEST_CASE("in-root read: the size cap is exact") {
  auto how = resolver();
  HostAndRoot t;
  const std::size_t cap = 10 << 20;
  test::write_file(t.root / "etc/passwd", std::string(cap, 'a'));
  REQUIRE(read(t, how, cap)->size() == cap);
  test::write_file(t.root / "etc/passwd", std::string(cap + 1, 'a'));
  REQUIRE_THROWS_WITH(read(t, how, cap), Catch::Contains("the limit is 10485760"));
}

TEST_CASE("in-root read: the stat is the file's, for permission checks") {
  HostAndRoot t;
  test::write_file(t.root / "etc/passwd", "x\n", 0664);
  bool root = ::geteuid() == 0;
  if (root) REQUIRE(::chown((t.root / "etc/passwd").c_str(), 10001, 0) == 0);
  auto f = fs::read_file_in_root(t.root, "etc/passwd", 100);
  REQUIRE((f->st.st_mode & 07777) == 0664);
  if (root) REQUIRE(f->st.st_uid == 10001);
}
