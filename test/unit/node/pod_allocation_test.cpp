// SPDX-License-Identifier: Apache-2.0
// specshim/node/pod_allocation.h: which host devices are accelerators and which
// of them the kubelet allocated to a pod, compared by device numbers. Real
// nodes (mknod under a temp dir, as root), a checkpoint written by the
// fakes' write_checkpoint, a CDI spec dir, a driver list under a fake
// /proc, and PodResources answers from a lookup the test gives.
#include "specshim/node/pod_allocation.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_kubelet.h"
#include "host_device.h"
#include "specshim/base/config.h"
#include "specshim/base/spec.h"
#include "specshim/kubelet/client.h"
#include "specshim/kubelet/errors.h"
#include "specshim/modifiers/allocation_sources.h"
#include "tempdir.h"

using namespace specshim;
using namespace specshim::pod_allocation;
using Catch::Contains;
using test::CheckpointLayout;
using test::TempDir;
using test::write_file;

namespace {

namespace sfs = std::filesystem;

const std::string kUid = "uid-box-7";
const std::string kResource = "example.com/accel";

// Host lays out the node: c 1:11 (the pod's), c 1:12 (another pod's),
// c 1:13 (an [[env-devices]] kind's, in the CDI spec dir only), c 10:229 (a
// FUSE node: no resource), and GPU-aaa/GPU-bbb in the driver's list whose
// nodes are c 1:11 and c 1:12 under the temp dir's names.
struct Host {
  TempDir tmp;
  sfs::path dev = tmp / "dev";
  sfs::path kubelet = tmp / "kubelet";
  sfs::path cdi = tmp / "cdi";
  sfs::path proc = tmp / "proc";
  Host() {
    sfs::create_directories(dev);
    sfs::create_directories(cdi);
    node("accel0", 1, 11);
    node("accel1", 1, 12);
    node("accel2", 1, 13);
    node("fuse", 10, 229);
    sfs::create_symlink(dev / "accel0", dev / "by-id-0");
    test::write_checkpoint(kubelet,
                           {{kUid, "main", kResource, {{"0", {"accel-0"}}}, answer("accel0")},
                            {"uid-other", "main", kResource, {{"0", {"accel-1"}}}, answer("accel1")}},
                           {}, CheckpointLayout::numa);
    write_file(cdi / "accel.json",
               R"({"cdiVersion": "0.6.0", "kind": "example.com/kind", "devices": [{"name": "2",
                 "containerEdits": {"deviceNodes": [{"path": "/dev/accel2", "hostPath": ")" +
                   (dev / "accel2").string() + R"("}]}}]})");
  }
  kubelet::AllocateResponse answer(const std::string& name) const {
    kubelet::AllocateResponse a;
    a.devices = {{"/dev/" + name, (dev / name).string(), "rw"}};
    return a;
  }
  void node(const std::string& name, int maj, int min) const {
    REQUIRE(::mknod((dev / name).c_str(), S_IFCHR | 0666, makedev(maj, min)) == 0);
  }
  Sources sources(bool env_kind = false) const {
    Sources s;
    s.resources = {kResource};
    s.cdi_dirs = std::vector<std::string>{cdi.string()};
    s.proc = proc;
    s.kubelet_root = kubelet;
    if (env_kind) {
      env_devices::Entry e;
      e.env = "KIND_VISIBLE_DEVICES";
      e.kind = "example.com/kind";
      e.resources = {"example.com/kind"};
      s.env_lists.push_back(env_list(e));
    }
    return s;
  }
  std::string path(const std::string& name) const { return (dev / name).string(); }
};

kubelet::PodResources box(const std::map<std::string, kubelet::ResourceDevices>& containers) {
  kubelet::PodResources p;
  p.ns = "dev";
  p.name = "box-7";
  p.containers = containers;
  return p;
}

// lookup answers PodResources with pod for dev/box-7 and NotFound otherwise,
// counting the calls.
PodResourcesLookup lookup(kubelet::PodResources pod, int* calls = nullptr) {
  return [pod, calls](const std::string& ns, const std::string& name) {
    if (calls) ++*calls;
    if (ns == pod.ns && name == pod.name) return pod;
    throw kubelet::NotFound("call Get on `kubelet.sock`: pod " + name + " in namespace " + ns + " not found");
  };
}

Target cri_main() {
  Target t;
  t.identity.cri = true;
  t.identity.pod = {"dev", "box-7"};
  t.identity.uid = kUid;
  t.identity.container = "main";
  return t;
}

DeviceNumber c(int maj, int min) {
  return DeviceNumber{'c', maj, min};
}

}  // namespace

TEST_CASE("pod allocation: a symlink and its target are one device number, a file or nothing is none") {
  Host host;
  REQUIRE(number_of(host.path("accel0")) == c(1, 11));
  CHECK(number_of(host.path("by-id-0")) == number_of(host.path("accel0")));
  write_file(host.dev / "plain", "x");
  CHECK_FALSE(number_of(host.path("plain")));
  CHECK_FALSE(number_of(host.path("missing")));
  CHECK(c(1, 11).str() == "c 1:11");
}

TEST_CASE("pod allocation: the accelerators are every checkpoint entry's nodes, env-devices kinds and driver GPUs") {
  Host host;
  test::list_gpu(host.proc, "0000:3b:00.0", "GPU-AAA", 200);  // no node: the driver's c 195:200
  Node node(host.sources(true), lookup(box({})));
  const auto& all = node.accelerators();
  CHECK(all.size() == 4);
  REQUIRE(node.accelerator(c(1, 11)));
  CHECK(node.accelerator(c(1, 11))->of == std::vector<std::string>{"`example.com/accel`"});
  REQUIRE(node.accelerator(c(1, 12)));  // another pod's
  REQUIRE(node.accelerator(c(1, 13)));
  CHECK(node.accelerator(c(1, 13))->of == std::vector<std::string>{"CDI kind `example.com/kind`"});
  REQUIRE(node.accelerator(c(195, 200)));
  CHECK(node.accelerator(c(195, 200))->gpu == "GPU-AAA");
  CHECK_FALSE(node.accelerator(c(10, 229)));  // FUSE: no resource
  // Without the [[env-devices]] kind, its CDI device is not one.
  Node plain(host.sources(false), lookup(box({})));
  CHECK_FALSE(plain.accelerator(c(1, 13)));
  // A resource no table names hands out nothing that counts.
  Sources none = host.sources();
  none.resources.clear();
  Node unknown(none, lookup(box({})));
  CHECK_FALSE(unknown.accelerator(c(1, 11)));
}

TEST_CASE("pod allocation: a GPU's UUID gives its number and names it in the description") {
  Host host;
  test::list_gpu(host.proc, "0000:3b:00.0", "GPU-aaa", 11);
  // A stand-in node for the driver's /dev/nvidia11 is not there: c 195:11.
  Node node(host.sources(), lookup(box({{"main", {{"nvidia.com/gpu", {"GPU-AAA::1"}}}}})));
  const Allocation& a = node.allocation({"dev", "box-7"}, "");
  CHECK(a.holds(c(195, 11)));  // the ID, a time-slicing replica, names GPU-aaa
  REQUIRE(node.accelerator(c(195, 11)));
  CHECK_THAT(node.accelerator(c(195, 11))->describe(), Contains("GPU GPU-aaa"));
}

TEST_CASE("pod allocation: a pod holds its containers' checkpoint entries and PodResources' devices, by number") {
  Host host;
  int calls = 0;
  // PodResources names the sibling-less pod's one entry; another container's
  // device IDs map through the checkpoint (entries_for_devices).
  Node node(host.sources(), lookup(box({{"main", {{kResource, {"accel-0"}}}}}), &calls));
  const Allocation& a = node.allocation({"dev", "box-7"}, kUid);
  CHECK(a.holds(c(1, 11)));
  CHECK_FALSE(a.holds(c(1, 12)));
  CHECK(a.describe() == "`example.com/accel` accel-0 of container `main` (c 1:11)");
  // Asked once per pod.
  node.allocation({"dev", "box-7"}, kUid);
  CHECK(calls == 1);
  // Without the uid (a sibling outside CRI), PodResources' IDs find the entry.
  Node sibling(host.sources(), lookup(box({{"main", {{kResource, {"accel-0"}}}}})));
  CHECK(sibling.allocation({"dev", "box-7"}, "").holds(c(1, 11)));
  // A pod the kubelet does not know holds nothing.
  const Allocation& other = sibling.allocation({"dev", "gone"}, "");
  CHECK(other.holdings.empty());
  CHECK_THAT(other.describe(), Contains("nothing (PodResources knows no such pod"));
}

TEST_CASE("pod allocation: a DRA claim's CDI devices are held by their nodes") {
  Host host;
  kubelet::PodResources pod = box({{"main", {}}});
  kubelet::ClaimResource res{"example.com", "pool", "d2", {"example.com/kind=2"}, std::nullopt};
  pod.assignments["main"].dynamic_resources.push_back({"gpus", "dev", {res}});
  Node node(host.sources(true), lookup(pod));
  const Allocation& a = node.allocation({"dev", "box-7"}, "");
  CHECK(a.holds(c(1, 13)));
  CHECK_THAT(a.describe(), Contains("DRA claim `dev/gpus` (example.com/kind=2) of container `main` (c 1:13)"));
}

TEST_CASE("pod allocation: check_bound passes the pod's own and unknown devices, refuses another pod's by name") {
  Host host;
  Node node(host.sources(), lookup(box({{"main", {{kResource, {"accel-0"}}}}})));
  Target t = cri_main();
  // The pod's own device, reached through a symlink, and a FUSE node.
  CHECK_NOTHROW(check_bound(node, t,
                            {{"device /dev/by-id-0", host.path("by-id-0"), *number_of(host.path("by-id-0"))},
                             {"device fuse", host.path("fuse"), c(10, 229)}}));
  // Another pod's: refused, naming the device, the pod and what it holds.
  try {
    check_bound(node, t, {{"device accel1", host.path("accel1"), c(1, 12)}});
    FAIL("not refused");
  } catch (const Refused& e) {
    std::string m = e.what();
    CHECK_THAT(m, Contains("device accel1: " + host.path("accel1") + " (c 1:12, of `example.com/accel`)"));
    CHECK_THAT(m, Contains("is not allocated to pod `dev/box-7`, which holds `example.com/accel` accel-0 of "
                           "container `main` (c 1:11)"));
    CHECK_THAT(m, Contains("[hotplug] bound = \"pod-allocation\""));
  }
}

TEST_CASE("pod allocation: a container with no pod gets no accelerator, the kubelet not answering refuses") {
  Host host;
  Node node(host.sources(), lookup(box({})));
  Target none;  // outside CRI, no specshim.io/pod
  CHECK_NOTHROW(check_bound(node, none, {{"device fuse", host.path("fuse"), c(10, 229)}}));
  CHECK_THROWS_WITH(check_bound(node, none, {{"device a", host.path("accel0"), c(1, 11)}}),
                    Contains("the container belongs to no pod (created outside CRI, no specshim.io/pod annotation)"));

  Node down(host.sources(), [](const std::string&, const std::string&) -> kubelet::PodResources {
    throw kubelet::Unavailable("call Get on `/k/pod-resources/kubelet.sock`: unavailable: connection refused");
  });
  CHECK_THROWS_AS(check_bound(down, cri_main(), {{"device a", host.path("accel0"), c(1, 11)}}), Refused);
  CHECK_THROWS_WITH(check_bound(down, cri_main(), {{"device a", host.path("accel0"), c(1, 11)}}),
                    Contains("cannot tell what pod `dev/box-7` holds: call Get on `/k/pod-resources/kubelet.sock`"));
  // Nothing is asked when no want is an accelerator.
  CHECK_NOTHROW(check_bound(down, cri_main(), {{"device fuse", host.path("fuse"), c(10, 229)}}));
}

TEST_CASE("pod allocation: a missing checkpoint is a pod holding nothing, target_of reads the spec pod") {
  Host host;
  sfs::remove(kubelet::checkpoint_file(host.kubelet));
  test::list_gpu(host.proc, "0000:3b:00.0", "GPU-aaa", 11);
  Node node(host.sources(), lookup(box({})));
  CHECK(node.allocation({"dev", "box-7"}, kUid).holdings.empty());
  CHECK_THROWS_AS(check_bound(node, cri_main(), {{"gpu GPU-aaa", "/dev/nvidia11", c(195, 11)}}), Refused);

  Spec sibling = Spec::parse(R"({"ociVersion": "1.0.2", "annotations": {"specshim.io/pod": "dev/box-7"}})");
  Target t = target_of(sibling);
  CHECK(t.identity.pod.str() == "dev/box-7");
  CHECK_FALSE(t.identity.cri);
  Spec bad = Spec::parse(R"({"ociVersion": "1.0.2", "annotations": {"specshim.io/pod": "no-slash"}})");
  CHECK_FALSE(target_of(bad).identity_error.empty());
}
