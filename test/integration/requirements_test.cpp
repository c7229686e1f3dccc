// SPDX-License-Identifier: Apache-2.0
// The requirements modifier through specshim and real runc: what a matched
// container sees from the inside.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using specshim::Json;

namespace {

constexpr int kCapIpcLock = 14;

// The rule raises RLIMIT_MEMLOCK from the bundle's 64 KiB to 4 MiB: below the
// 8 MiB default hard limit, so the test holds on hosts where runc lacks
// CAP_SYS_RESOURCE (as here) and could not raise a hard limit beyond its own.
constexpr const char* kConfig = R"([[requirements]]
name = "vfio"
match = { devices = ["/dev/vfio/[0-9]*"] }
capabilities = ["CAP_IPC_LOCK"]
rlimits = { RLIMIT_MEMLOCK = { soft = 4194304, hard = 4194304 } }
additional-gids = [44]
env = ["VFIO_ENABLED=1"]
)";

// The probe prints one fact per line: locked-memory limit in KiB, CapEff,
// supplementary groups, the rule's env.
constexpr const char* kProbe =
    "ulimit -l; grep '^CapEff:' /proc/self/status | cut -f2; id -G; echo \"vfio=${VFIO_ENABLED:-unset}\"";

struct Probe {
  std::string memlock_kib;
  unsigned long long cap_eff = 0;
  std::string groups;
  std::string env;
};

Probe parse(const std::string& out) {
  std::istringstream in(out);
  Probe p;
  std::string caps;
  std::getline(in, p.memlock_kib);
  std::getline(in, caps);
  std::getline(in, p.groups);
  std::getline(in, p.env);
  p.cap_eff = std::stoull(caps, nullptr, 16);
  return p;
}

// fake_device makes a real character node with /dev/null's numbers, as a
// device plugin would hand over a node, and returns its linux.devices entry.
Json fake_device(const fs::path& dir, const std::string& container_path) {
  fs::path node = dir / "vfio-node";
  REQUIRE(::mknod(node.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0);
  struct stat st {};
  REQUIRE(::stat(node.c_str(), &st) == 0);
  return Json{{"path", container_path},
              {"type", "c"},
              {"major", major(st.st_rdev)},
              {"minor", minor(st.st_rdev)},
              {"fileMode", 0666},
              {"uid", 0},
              {"gid", 0}};
}

// run_probe runs the probe in a busybox bundle whose MEMLOCK limit is 64 KiB,
// with devices in linux.devices.
ProcessResult run_probe(const TempDir& tmp, const Json& devices) {
  BusyboxBundle b(tmp / "bundle");
  b.set_args({"/bin/sh", "-c", kProbe});
  b.spec()["process"]["rlimits"].push_back(Json{{"type", "RLIMIT_MEMLOCK"}, {"hard", 65536}, {"soft", 65536}});
  b.spec()["linux"]["devices"] = devices;
  b.save();
  Shim shim(tmp.path(), kConfig);
  auto r = shim.run(b, unique_id("it-req"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  return r;
}

}  // namespace

TEST_CASE("requirements: a container with a matched device gets the locked-memory limit, capability, group and env") {
  TempDir tmp;
  auto r = run_probe(tmp, Json::array({fake_device(tmp.path(), "/dev/vfio/0")}));
  INFO(r.out);
  Probe p = parse(r.out);
  REQUIRE(p.memlock_kib == "4096");
  REQUIRE((p.cap_eff >> kCapIpcLock & 1) == 1);
  REQUIRE_THAT(" " + p.groups + " ", Catch::Contains(" 44 "));
  REQUIRE(p.env == "vfio=1");
}

TEST_CASE("requirements: a container without the device keeps its limits and capabilities") {
  TempDir tmp;
  // /dev/vfio/vfio is the VFIO control node: the rule's glob asks for a group number.
  auto r = run_probe(tmp, Json::array({fake_device(tmp.path(), "/dev/vfio/vfio")}));
  INFO(r.out);
  Probe p = parse(r.out);
  REQUIRE(p.memlock_kib == "64");
  REQUIRE((p.cap_eff >> kCapIpcLock & 1) == 0);
  REQUIRE_THAT(" " + p.groups + " ", !Catch::Contains(" 44 "));
  REQUIRE(p.env == "vfio=unset");
}
