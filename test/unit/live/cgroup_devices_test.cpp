// SPDX-License-Identifier: Apache-2.0
// live: finding a process's cgroups from /proc/PID/cgroup and mountinfo, and
// the systemd request for a rule list (systemd itself is not on this host:
// only the request is tested, see docs/attach.md).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "specshim/base/error.h"
#include "specshim/live/cgroup_devices.h"
#include "tempdir.h"

using namespace specshim;
using namespace specshim::live;

namespace {

// A hybrid host like this one: v1 controllers plus cgroup2 at /sys/fs/cgroup/unified.
constexpr const char* kHybridMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

DeviceRule allow(char type, std::optional<std::int64_t> major, std::optional<std::int64_t> minor,
                 std::string access = "rwm") {
  return {true, type, major, minor, std::move(access)};
}

}  // namespace

TEST_CASE("live places: a hybrid host has a v1 devices cgroup and a cgroup2 one") {
  auto p = parse_cgroup_places(
      "5:devices:/default/abc\n4:memory:/default/abc\n1:name=systemd:/default/abc\n0::/default/abc\n", kHybridMounts);
  REQUIRE(p.v1_devices);
  CHECK(*p.v1_devices == "/sys/fs/cgroup/devices/default/abc");
  REQUIRE(p.unified);
  CHECK(*p.unified == "/sys/fs/cgroup/unified/default/abc");
  CHECK(p.systemd_unit.empty());
}

TEST_CASE("live places: a unified host, a systemd scope, a path with a colon and a space") {
  std::string mounts = "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
  auto p = parse_cgroup_places(
      "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-abc.scope\n", mounts);
  CHECK_FALSE(p.v1_devices);
  REQUIRE(p.unified);
  CHECK(*p.unified ==
        "/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/"
        "cri-containerd-abc.scope");
  CHECK(p.systemd_unit == "cri-containerd-abc.scope");
  p = parse_cgroup_places("0::/system.slice/docker.service/a:b\n",
                          "30 23 0:26 / /mnt/cg\\040two rw - cgroup2 cgroup2 rw\n");
  CHECK(*p.unified == "/mnt/cg two/system.slice/docker.service/a:b");
  CHECK(p.systemd_unit == "docker.service");
}

TEST_CASE("live places: a v1 scope is found through the devices path, unmounted hierarchies are left out") {
  auto p = parse_cgroup_places("5:devices:/system.slice/cri-containerd-x.scope\n0::/\n",
                               "36 31 0:33 / /sys/fs/cgroup/devices rw - cgroup cgroup rw,devices\n");
  CHECK(*p.v1_devices == "/sys/fs/cgroup/devices/system.slice/cri-containerd-x.scope");
  CHECK_FALSE(p.unified);  // no cgroup2 mount
  CHECK(p.systemd_unit == "cri-containerd-x.scope");
  // A mount of another part of the hierarchy (root /other) does not hold /default/abc.
  p = parse_cgroup_places("5:devices:/default/abc\n",
                          "36 31 0:33 /other /sys/fs/cgroup/devices rw - cgroup cgroup rw,devices\n");
  CHECK_FALSE(p.v1_devices);
  p = parse_cgroup_places("5:devices:/default/abc\n",
                          "36 31 0:33 /default /sys/fs/cgroup/devices rw - cgroup cgroup rw,devices\n");
  CHECK(*p.v1_devices == "/sys/fs/cgroup/devices/abc");
}

TEST_CASE("live places: cgroup_places of this process reads the real files") {
  auto p = cgroup_places(::getpid());
  // This host is hybrid (docs/attach.md); any host has at least one of them.
  CHECK((p.v1_devices || p.unified));
  if (p.unified) CHECK(std::filesystem::is_directory(*p.unified));
  if (p.v1_devices) CHECK(std::filesystem::exists(*p.v1_devices / "devices.allow"));
  CHECK_THROWS_AS(cgroup_places(0x3fffffff), Error);
}

TEST_CASE("live systemd: DeviceAllow= values for a rule list, as systemd >= 240 reads them") {
  std::vector<DeviceRule> rules = {{false, 'a', {}, {}, "rwm"},
                                   allow('c', 1, 11, "rw"),
                                   allow('b', 8, std::nullopt, "r"),
                                   allow('c', std::nullopt, std::nullopt, "m"),
                                   allow('c', std::nullopt, 3, "r")};
  auto req = systemd_device_allow("cri-containerd-abc.scope", rules);
  CHECK(req.unit == "cri-containerd-abc.scope");
  // Sorted by key (type, major, minor), as the controller holds them.
  CHECK(req.values == std::vector<std::string>{"", "block-8 r", "char-* m", "/dev/char/1:11 rw"});
  CHECK(req.unsupported == std::vector<std::string>{"allow c *:3 r"});
  CHECK(req.systemctl_argv() == std::vector<std::string>{"systemctl", "set-property", "--runtime", "--",
                                                         "cri-containerd-abc.scope",
                                                         "DeviceAllow=", "DeviceAllow=block-8 r",
                                                         "DeviceAllow=char-* m", "DeviceAllow=/dev/char/1:11 rw"});
  // runc's defaults: every entry has a systemd form.
  req = systemd_device_allow("x.scope", runc_default_rules());
  CHECK(req.unsupported.empty());
  CHECK(req.values.size() == 1 + runc_default_rules().size());
  CHECK(req.values[1] == "block-* m");
  CHECK(req.values[2] == "char-* m");
}

TEST_CASE("live systemd: allow-all, and allow-by-default with denies (which systemd cannot say)") {
  auto req = systemd_device_allow("x.scope", {{true, 'a', {}, {}, "rwm"}});
  CHECK(req.values == std::vector<std::string>{"", "char-* rwm", "block-* rwm"});
  CHECK(req.unsupported.empty());
  req = systemd_device_allow("x.scope", {{true, 'a', {}, {}, "rwm"}, {false, 'c', 1, 11, "w"}});
  CHECK(req.values == std::vector<std::string>{""});
  CHECK(req.unsupported == std::vector<std::string>{"deny c 1:11 w"});
  // Empty list: deny everything, as the program does.
  CHECK(systemd_device_allow("x.scope", {}).values == std::vector<std::string>{""});
}

TEST_CASE("live systemd: systemd_is_pid1 looks for run/systemd/system under a root") {
  specshim::test::TempDir tmp;
  CHECK_FALSE(systemd_is_pid1(tmp.path()));
  std::filesystem::create_directories(tmp / "run/systemd");
  {
    std::ofstream f(tmp / "run/systemd/system");  // a file is not the directory
  }
  CHECK_FALSE(systemd_is_pid1(tmp.path()));
  std::filesystem::remove(tmp / "run/systemd/system");
  std::filesystem::create_directories(tmp / "run/systemd/system");
  CHECK(systemd_is_pid1(tmp.path()));
}
