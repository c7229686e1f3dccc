// SPDX-License-Identifier: Apache-2.0
// The passwd modifier through the real specshim binary and real runc: what
// the container resolves, what the shim leaves alone, and the image tricks
// (symlinks to host files, a FIFO) that must not reach the host.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;

namespace {

constexpr const char* kImagePasswd = "root:x:0:0:root:/root:/bin/sh\n";  // what BusyboxBundle writes
constexpr const char* kImageGroup = "root:x:0:\n";
constexpr const char* kUserLine = "user10001:x:10001:10001:specshim runtime user:/tmp:/sbin/nologin\n";
constexpr const char* kGroupLine = "group10001:x:10001:\n";
constexpr const char* kOnlyPasswd = "[chain]\norder = [\"passwd\"]\n";

// Pod is a busybox bundle running as 10001:10001 with no HOME in its env
// (so runc takes HOME from the passwd entry), and the shim that runs it.
struct Pod {
  explicit Pod(const std::string& config = kOnlyPasswd) : shim(tmp.path(), config) {
    b.set_user(10001, 10001);
    b.spec()["process"]["env"] = specshim::Json::array({"PATH=/bin"});
    b.save();
  }
  ProcessResult run(const std::string& script) {
    b.set_args({"/bin/sh", "-c", script});
    b.save();
    before = config();
    return shim.run(b, unique_id("it-passwd"));
  }
  // run_left_alone runs script, checks that the shim changed nothing
  // (config.json byte-identical, no copies written) and returns stdout.
  std::string run_left_alone(const std::string& script) {
    auto r = run(script);
    INFO(r.err << Shim::log(b));
    REQUIRE(r.exit_code == 0);
    REQUIRE(config() == before);
    REQUIRE_FALSE(wrote("specshim-passwd"));
    REQUIRE_FALSE(wrote("specshim-group"));
    return r.out;
  }
  std::string config() const { return read_file(b.dir() / "config.json"); }
  int mounts_at(const std::string& destination) const {
    int n = 0;
    specshim::Json spec = specshim::Json::parse(config());
    for (const auto& m : spec["mounts"]) n += m["destination"] == destination;
    return n;
  }
  bool wrote(const char* name) const { return fs::exists(b.dir() / name); }

  TempDir tmp;
  BusyboxBundle b{tmp / "bundle"};
  Shim shim;
  std::string before;
};

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st;
}

}  // namespace

TEST_CASE("passwd: a uid the image lacks resolves to a name in the container") {
  Pod pod;
  auto r = pod.run("id -un; id -gn; echo $HOME; echo x >> /etc/passwd 2>/dev/null && echo writable || echo read-only");
  INFO(r.err << Shim::log(pod.b));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out == "user10001\ngroup10001\n/tmp\nread-only\n");
  REQUIRE(read_file(pod.b.dir() / "specshim-passwd") == std::string(kImagePasswd) + kUserLine);
  REQUIRE(read_file(pod.b.dir() / "specshim-group") == std::string(kImageGroup) + kGroupLine);
  REQUIRE((stat_of(pod.b.dir() / "specshim-passwd").st_mode & 07777) == 0644);
  REQUIRE(pod.mounts_at("/etc/passwd") == 1);
  REQUIRE(pod.mounts_at("/etc/group") == 1);
  // The image's own files are untouched.
  REQUIRE(read_file(pod.b.rootfs() / "etc/passwd") == kImagePasswd);
  REQUIRE(read_file(pod.b.rootfs() / "etc/group") == kImageGroup);
}

TEST_CASE("passwd: missing /etc/passwd and /etc/group get files holding only the entries") {
  Pod pod;
  fs::remove(pod.b.rootfs() / "etc/passwd");
  fs::remove(pod.b.rootfs() / "etc/group");
  auto r = pod.run("id -un; id -gn; cat /etc/passwd /etc/group");
  INFO(r.err << Shim::log(pod.b));
  REQUIRE(r.out == std::string("user10001\ngroup10001\n") + kUserLine + kGroupLine);
}

TEST_CASE("passwd: an image that already has the uid and gid is untouched") {
  Pod pod;
  write_file(pod.b.rootfs() / "etc/passwd", std::string(kImagePasswd) + "app:x:10001:10001:app:/home/app:/bin/sh\n");
  write_file(pod.b.rootfs() / "etc/group", std::string(kImageGroup) + "app:x:10001:\n");
  REQUIRE(pod.run_left_alone("id -un; id -gn") == "app\napp\n");
}

TEST_CASE("passwd: uid 0 is left alone") {
  Pod pod;
  pod.b.set_user(0, 0);
  REQUIRE(pod.run_left_alone("id -un") == "root\n");
}

TEST_CASE("passwd: files the spec already mounts are left alone") {
  Pod pod;
  write_file(pod.tmp / "mine/passwd", "custom:x:10001:10001::/tmp:/bin/sh\n");
  write_file(pod.tmp / "mine/group", "customgrp:x:10001:\n");
  for (const char* f : {"passwd", "group"})
    pod.b.spec()["mounts"].push_back({{"destination", std::string("/etc/") + f},
                                      {"type", "bind"},
                                      {"source", (pod.tmp / "mine" / f).string()},
                                      {"options", {"rbind", "ro"}}});
  REQUIRE(pod.run_left_alone("id -un; id -gn") == "custom\ncustomgrp\n");
}

TEST_CASE("passwd: an image whose files the uid can write manages them itself") {
  Pod pod;
  ::chmod((pod.b.rootfs() / "etc/passwd").c_str(), 0666);
  ::chmod((pod.b.rootfs() / "etc/group").c_str(), 0666);
  // The entrypoint pattern such images use: add yourself when missing.
  REQUIRE(pod.run_left_alone("grep -q :10001: /etc/passwd || echo self:x:10001:10001::/tmp:/bin/sh >> /etc/passwd; "
                             "id -un") == "self\n");
}

TEST_CASE("passwd: a bad request fails the create before runc runs and writes nothing") {
  Pod pod("[chain]\norder = [\"passwd\"]\n[passwd]\nallow-annotations = true\n");
  std::string want;
  SECTION("a user name with a newline") {
    pod.b.spec()["annotations"] = {{"specshim.io/passwd-name", "a\nroot2:x:0:0::/:/bin/sh"}};
    want = "annotation `specshim.io/passwd-name`";
  }
  SECTION("a HOME with a newline") {
    pod.b.spec()["process"]["env"].push_back("HOME=/x\nevil:x:0:0::/:/bin/sh");
    want = "process.env `HOME`";
  }
  pod.b.set_args({"id", "-un"});
  pod.b.save();
  std::string before = pod.config();
  std::string id = unique_id("it-passwd-bad");
  auto r = pod.shim.call(pod.b, {"create", "--bundle", pod.b.dir().string(), id}, false);
  std::string log = Shim::log(pod.b);
  INFO(log);
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(log, Catch::Contains("\"level\":\"error\",\"msg\":\"specshim: passwd: " + want));
  REQUIRE(log.find("root2") == std::string::npos);
  REQUIRE(log.find("evil") == std::string::npos);
  REQUIRE(pod.config() == before);
  REQUIRE_FALSE(pod.wrote("specshim-passwd"));
  REQUIRE(pod.shim.call(pod.b, {"state", id}).exit_code != 0);  // runc never ran
}

TEST_CASE("passwd: annotations name the user and its home when allowed") {
  Pod pod("[chain]\norder = [\"passwd\"]\n[passwd]\nallow-annotations = true\n");
  pod.b.spec()["annotations"] = {{"specshim.io/passwd-name", "alice_1"}, {"specshim.io/passwd-home", "/home/alice"}};
  auto r = pod.run("id -un; echo $HOME");
  INFO(r.err << Shim::log(pod.b));
  REQUIRE(r.out == "alice_1\n/home/alice\n");
}

TEST_CASE("passwd: symlinks to a host file are resolved inside the rootfs") {
  // The host files hold entries for 10001: if the shim read them it would
  // find the uid present, add nothing, and `id -un` would fail.
  Pod pod;
  fs::path host = pod.tmp / "host";
  write_file(host / "passwd", "hostuser:x:10001:10001:HOSTSECRET:/:/bin/sh\n");
  write_file(host / "group", "hostgroup:x:10001:\n");
  auto host_before = stat_of(host / "passwd");
  fs::path etc = pod.b.rootfs() / "etc";
  std::string climb = "../../../../../../../../../../../..";
  SECTION("relative links climbing out of the rootfs") {
    for (const char* f : {"passwd", "group"}) {
      fs::remove(etc / f);
      fs::create_symlink(climb + (host / f).string(), etc / f);
    }
  }
  SECTION("absolute links to the host files") {
    for (const char* f : {"passwd", "group"}) {
      fs::remove(etc / f);
      fs::create_symlink(host / f, etc / f);
    }
  }
  SECTION("/etc itself a link to the host directory") {
    fs::remove_all(etc);
    fs::create_symlink(host, etc);
  }
  auto r = pod.run("id -un; id -gn");
  INFO(r.err << Shim::log(pod.b));
  REQUIRE(r.out == "user10001\ngroup10001\n");
  REQUIRE(read_file(pod.b.dir() / "specshim-passwd") == kUserLine);
  REQUIRE(read_file(pod.b.dir() / "specshim-group") == kGroupLine);
  REQUIRE(Shim::log(pod.b).find("HOSTSECRET") == std::string::npos);
  auto host_after = stat_of(host / "passwd");
  REQUIRE(host_after.st_mtim.tv_sec == host_before.st_mtim.tv_sec);
  REQUIRE(host_after.st_mtim.tv_nsec == host_before.st_mtim.tv_nsec);
  REQUIRE(read_file(host / "passwd") == "hostuser:x:10001:10001:HOSTSECRET:/:/bin/sh\n");
}

TEST_CASE("passwd: a FIFO at /etc/passwd does not block the shim") {
  // runc 1.1 itself blocks on such an image (it opens /etc/passwd at start),
  // so the runtime here is the recording fake: this checks specshim only.
  Pod pod(std::string(kOnlyPasswd) + "[runtime]\npath = \"" RECORDING_RUNTIME "\"\n");
  fs::remove(pod.b.rootfs() / "etc/passwd");
  REQUIRE(::mkfifo((pod.b.rootfs() / "etc/passwd").c_str(), 0644) == 0);
  auto r = pod.shim.call(pod.b, {"create", "--bundle", pod.b.dir().string(), unique_id("it-passwd-fifo")});
  INFO(r.err << Shim::log(pod.b));
  REQUIRE_FALSE(r.signaled);  // the harness kills a hung child after 30 s
  REQUIRE(r.exit_code == 0);
  REQUIRE(pod.mounts_at("/etc/passwd") == 0);
  REQUIRE(pod.mounts_at("/etc/group") == 1);
}

TEST_CASE("passwd: a retried create on the same bundle adds nothing twice") {
  Pod pod;
  pod.b.set_args({"id", "-un"});
  pod.b.save();
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string id = unique_id("it-passwd-retry");
    auto c = pod.shim.call(pod.b, {"create", "--bundle", pod.b.dir().string(), id}, false);
    INFO(Shim::log(pod.b));
    REQUIRE(c.exit_code == 0);
    REQUIRE(pod.shim.call(pod.b, {"delete", "--force", id}).exit_code == 0);
  }
  REQUIRE(pod.mounts_at("/etc/passwd") == 1);
  REQUIRE(pod.mounts_at("/etc/group") == 1);
  REQUIRE(read_file(pod.b.dir() / "specshim-passwd") == std::string(kImagePasswd) + kUserLine);
}
