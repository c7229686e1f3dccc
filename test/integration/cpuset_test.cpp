// SPDX-License-Identifier: Apache-2.0
// cpuset through the real specshim binary and real runc: a sibling created
// outside CRI, resolved through the fake kubelet (in this test process, via
// the specshim-kubelet helper next to the binary), runs pinned to its source
// container's exclusive CPU and NUMA node. The host has 2 CPUs and one node,
// so the source holds CPU 1 and node 0, and the container must see exactly
// that in its own status and its cpuset cgroup.
#include <catch2/catch.hpp>

#include "container.h"
#include "fake_kubelet.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using specshim::Json;

namespace {

struct Host {
  TempDir tmp;
  fs::path root = tmp / "kubelet";
  FakeKubelet kubelet{root};

  Host() {
    kubelet.add_pod("ns", "pod", "uid-it", {{"main", {}}});
    specshim::kubelet::ContainerAssignment a;
    a.cpu_ids = {1};
    a.memory = {{"memory", 64ULL << 20, {0}}};
    kubelet.assign("ns", "pod", "main", a);
  }
  std::string config() const {
    return "[chain]\norder = [\"cpuset\"]\n\n[cpuset]\nenabled = true\nkubelet-root = \"" + root.string() + "\"\n";
  }
};

BusyboxBundle sibling(const Host& host, const Json& cpu = nullptr) {
  BusyboxBundle b(host.tmp / "bundle");
  b.set_args({"sh", "-c",
              "grep -E '^(Cpus|Mems)_allowed_list' /proc/self/status; cat /sys/fs/cgroup/cpuset/cpuset.cpus "
              "/sys/fs/cgroup/cpuset/cpuset.mems"});
  b.spec()["annotations"] = {{"specshim.io/pod", "ns/pod"}, {"specshim.io/devices-from", "main"}};
  if (!cpu.is_null()) b.spec()["linux"]["resources"]["cpu"] = cpu;
  b.save();
  return b;
}

}  // namespace

TEST_CASE("cpuset: a sibling runs on its source container's exclusive CPU and NUMA node") {
  Host host;
  BusyboxBundle b = sibling(host);
  Shim shim(host.tmp.path(), host.config());
  auto r = shim.run(b, unique_id("it-cpuset"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out == "Cpus_allowed_list:\t1\nMems_allowed_list:\t0\n1\n0\n");
  Json spec = Json::parse(read_file(b.dir() / "config.json"));
  REQUIRE(spec["linux"]["resources"]["cpu"] == Json{{"cpus", "1"}, {"mems", "0"}});
  REQUIRE(host.kubelet.calls("Get") == 1);
}

TEST_CASE("cpuset: a sibling whose own cpuset excludes the source's CPUs is refused, naming both sets") {
  Host host;
  BusyboxBundle b = sibling(host, {{"cpus", "0"}});
  Shim shim(host.tmp.path(), host.config());
  std::string id = unique_id("it-cpuset-empty");
  auto r = shim.call(b, {"create", "--bundle", b.dir().string(), id}, false);
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(Shim::log(b), Contains("specshim: cpuset: pin container `" + id +
                                      "` of pod `ns/pod` to the CPUs of container `main`: linux.resources.cpu.cpus "
                                      "\\\"0\\\" and the kubelet's \\\"1\\\" have no CPU in common"));
  REQUIRE(Json::parse(read_file(b.dir() / "config.json"))["linux"]["resources"]["cpu"] == Json{{"cpus", "0"}});
  REQUIRE(shim.call(b, {"state", id}).exit_code != 0);
}
