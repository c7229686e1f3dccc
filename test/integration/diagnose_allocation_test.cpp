// SPDX-License-Identifier: Apache-2.0
// diagnose's allocation layer on running runc containers (busybox, as root,
// created by runc directly, not through specshim) that carry CRI's
// annotations: what the kubelet granted the container compared with its
// spec. The grant comes from a kubelet root in a temp dir: the device
// manager's checkpoint (written by the fakes' write_checkpoint, with a real
// protobuf Allocate answer), and the DRA claims the in-process FakeKubelet's
// PodResources serves, which specshim reaches through its specshim-kubelet
// helper next to it. The device is test/support's c 1:11 HostDevice, given
// as a linux.devices entry (runc makes the node) with its allow rule. The
// CDI names of a plugin's answer and of DRA claims resolve through a CDI spec
// dir in a temp dir ([cdi] spec-dirs).
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "container.h"
#include "diagnose_report.h"
#include "fake_kubelet.h"
#include "host_device.h"
#include "running.h"
#include "specshim/kubelet/types.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using specshim::Json;
using specshim::kubelet::AllocateResponse;
using specshim::kubelet::ClaimResource;
using specshim::kubelet::ContainerAssignment;

namespace {

const std::string kUid = "0f6a1c2e-0000-4000-8000-0000000000d1";
const std::string kResource = "example.com/accel";

// Host is the host side: the 1:11 node, a kubelet root and a CDI spec dir
// (both empty until a test fills them) and specshim's config naming them.
struct Host : HostDevice {
  fs::path kubelet = tmp / "kubelet";
  fs::path cdi = tmp / "cdi";
  fs::path config = tmp / "specshim.toml";

  explicit Host(const fs::path& kubelet_root = {}) {
    if (!kubelet_root.empty()) kubelet = kubelet_root;
    fs::create_directories(cdi);
    write_file(config, "[runtime]\npath = \"/usr/sbin/runc\"\n\n[kubelet]\nroot = \"" + kubelet.string() +
                           "\"\n\n[cdi]\nspec-dirs = [\"" + cdi.string() + "\"]\n");
  }

  // grant writes the checkpoint: container `main` of pod kUid got accel-0 of
  // example.com/accel, the plugin answering with the host node at
  // /dev/accel0 (rw) and ACCEL_VISIBLE=0.
  void grant() const {
    AllocateResponse a;
    a.devices = {{"/dev/accel0", node.string(), "rw"}};
    a.envs = {{"ACCEL_VISIBLE", "0"}};
    write_checkpoint(kubelet, {{kUid, "main", kResource, {{"0", {"accel-0"}}}, a}}, {}, CheckpointLayout::numa);
  }

  // grant_cdi writes the checkpoint with an answer of CDI names alone, as
  // CDI-enabled plugins (NVIDIA's cdi-cri strategy) give it: the kubelet
  // hands them to the runtime in CRI's CDIDevices field, and containerd
  // (enable_cdi) injects them with no annotation left in the spec.
  void grant_cdi(const std::string& name) const {
    AllocateResponse a;
    a.cdi_devices = {name};
    write_checkpoint(kubelet, {{kUid, "main", kResource, {{"0", {"accel-0"}}}, a}}, {}, CheckpointLayout::numa);
  }

  // cdi_spec defines example.com/accel=0: the host node at /dev/accel0.
  void cdi_spec() const {
    write_file(cdi / "accel.json", R"({"cdiVersion": "0.6.0", "kind": "example.com/accel", "devices": [{"name": "0",
                 "containerEdits": {"deviceNodes": [{"path": "/dev/accel0", "hostPath": ")" +
                                       node.string() + R"("}]}}]})");
  }
};

// cri is CRI's annotations of container `main` of pod team-a/trainer (uid kUid).
void cri(BusyboxBundle& b) {
  b.spec()["annotations"] = {
      {"io.kubernetes.cri.container-type", "container"}, {"io.kubernetes.cri.sandbox-namespace", "team-a"},
      {"io.kubernetes.cri.sandbox-name", "trainer"},     {"io.kubernetes.cri.sandbox-uid", kUid},
      {"io.kubernetes.cri.sandbox-id", "0123abcd"},      {"io.kubernetes.cri.container-name", "main"}};
}

// accel adds /dev/accel0 c 1:11 to linux.devices (with entry) and its rwm
// allow rule (with rule).
void accel(BusyboxBundle& b, bool entry = true, bool rule = true) {
  if (entry)
    b.spec()["linux"]["devices"].push_back({{"path", "/dev/accel0"},
                                            {"type", "c"},
                                            {"major", 1},
                                            {"minor", 11},
                                            {"fileMode", 0666},
                                            {"uid", 0},
                                            {"gid", 0}});
  if (rule)
    b.spec()["linux"]["resources"]["devices"].push_back(
        {{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", 11}, {"access", "rwm"}});
}

// cri_accel: a healthy CRI container of the pod with /dev/accel0.
void cri_accel(BusyboxBundle& b) {
  cri(b);
  accel(b);
}

void env(BusyboxBundle& b, const std::vector<std::string>& entries) {
  for (const auto& e : entries) b.spec()["process"]["env"].push_back(e);
}

// granted_as_answered: a CRI container of the pod with /dev/accel0 and the
// plugin's env, as host.grant()'s answer gives them.
void granted_as_answered(BusyboxBundle& b) {
  cri_accel(b);
  env(b, {"ACCEL_VISIBLE=0"});
}

// diagnose runs diagnose on the container (diagnose_report.h keeps the
// report's contract) and asserts it names the container and its pod.
Diagnosis diagnose_trainer(const Specshim& specshim) {
  Diagnosis d = diagnose(specshim);
  CHECK(d.report["container"] == specshim.c.id());
  CHECK(d.report["pod"] == Json{{"namespace", "team-a"}, {"name", "trainer"}, {"container", "main"}});
  return d;
}

}  // namespace

TEST_CASE("diagnose allocation: a checkpoint grant whose node and env reached the spec is ok in every layer") {
  Host host;
  host.grant();
  Running c(host.tmp / "c", granted_as_answered, "it-diag-alloc");
  Specshim specshim{c, host.config};
  REQUIRE(c.sh("(: > /dev/accel0) && echo open-ok") == "open-ok\n");

  auto d = diagnose_trainer(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 0);
  CHECK(failing_layers(d.report).empty());
  CHECK(statuses(d.report, "allocation", "/dev/accel0") == std::set<std::string>{"ok"});
  CHECK(any_contains(messages(d.report, "allocation", "/dev/accel0", "ok"), host.node.string()));
  CHECK(statuses(d.report, "allocation", "ACCEL_VISIBLE") == std::set<std::string>{"ok"});
  CHECK(any_contains(messages(d.report, "allocation", kResource, "info"), "accel-0"));
  // No PodResources socket under the kubelet root: DRA is not asked, and says so.
  CHECK(statuses(d.report, "allocation", "DRA") == std::set<std::string>{"info"});
  // The node checked is the granted one: its source names the kubelet's resource.
  CHECK(statuses(d.report, "node", "/dev/accel0") == std::set<std::string>{"ok"});
  CHECK(any_contains(messages(d.report, "node", "/dev/accel0", "ok"), "kubelet `example.com/accel`"));
  CHECK(statuses(d.report, "cgroup", "/dev/accel0") == std::set<std::string>{"ok"});
}

TEST_CASE("diagnose allocation: a pod-spec env entry after the plugin's overrides it: allocation fails alone") {
  Host host;
  host.grant();
  Running c(
      host.tmp / "c",
      [](BusyboxBundle& b) {
        cri(b);
        accel(b);
        env(b, {"ACCEL_VISIBLE=0", "ACCEL_VISIBLE=all"});
      },
      "it-diag-alloc");
  Specshim specshim{c, host.config};
  // What the process really gets: the last entry (runc drops the earlier duplicate).
  REQUIRE(c.sh("tr '\\0' '\\n' < /proc/1/environ | grep ^ACCEL_VISIBLE=") == "ACCEL_VISIBLE=all\n");

  auto d = diagnose_trainer(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(d.report["status"] == "fail");
  CHECK(failing_layers(d.report) == std::set<std::string>{"allocation"});
  CHECK(failing_subjects(d.report, "allocation") == std::set<std::string>{"ACCEL_VISIBLE"});
  auto failed = messages(d.report, "allocation", "ACCEL_VISIBLE", "fail");
  CHECK(any_contains(failed, "ACCEL_VISIBLE=all"));
  CHECK(any_contains(failed, "ACCEL_VISIBLE=0"));
  CHECK(statuses(d.report, "allocation", "/dev/accel0") == std::set<std::string>{"ok"});
  CHECK(statuses(d.report, "node", "/dev/accel0") == std::set<std::string>{"ok"});
}

TEST_CASE("diagnose allocation: a granted node missing from the spec fails allocation and node, nothing else") {
  // The allow rule is there (so the cgroup allows 1:11); only the linux.devices entry is missing.
  Host host;
  host.grant();
  Running c(
      host.tmp / "c",
      [](BusyboxBundle& b) {
        cri(b);
        accel(b, false, true);
        env(b, {"ACCEL_VISIBLE=0"});
      },
      "it-diag-alloc");
  Specshim specshim{c, host.config};
  REQUIRE(c.sh("[ -e /dev/accel0 ] || echo absent") == "absent\n");

  auto d = diagnose_trainer(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"allocation", "node"});
  CHECK(failing_subjects(d.report, "allocation") == std::set<std::string>{"/dev/accel0"});
  auto failed = messages(d.report, "allocation", "/dev/accel0", "fail");
  CHECK(any_contains(failed, "kubelet `example.com/accel`"));
  CHECK(any_contains(failed, "no entry for /dev/accel0"));
  CHECK(statuses(d.report, "allocation", "ACCEL_VISIBLE") == std::set<std::string>{"ok"});
  CHECK(failing_subjects(d.report, "node") == std::set<std::string>{"/dev/accel0"});
  CHECK(any_contains(messages(d.report, "node", "/dev/accel0", "fail"), "does not exist"));
  CHECK(statuses(d.report, "cgroup", "/dev/accel0") == std::set<std::string>{"ok"});
}

TEST_CASE("diagnose allocation: a DRA claim's CDI devices from PodResources, resolved through [cdi] spec-dirs") {
  Host host;
  host.cdi_spec();
  FakeKubelet kubelet(host.kubelet);
  kubelet.add_pod("team-a", "trainer", kUid, {{"main", {}}});
  auto claim = [&](const std::string& cdi_device) {
    ContainerAssignment claimed;
    ClaimResource device{.driver_name = "accel.example.com",
                         .pool_name = "node",
                         .device_name = "accel-0",
                         .cdi_devices = {cdi_device},
                         .share_id = {}};
    claimed.dynamic_resources = {{"accel-claim", "team-a", {device}}};
    kubelet.assign("team-a", "trainer", "main", claimed);
  };
  Running c(host.tmp / "c", cri_accel, "it-diag-alloc");
  Specshim specshim{c, host.config};

  SECTION("defined by a spec file and in the spec: ok, naming the claim") {
    claim("example.com/accel=0");
    auto d = diagnose_trainer(specshim);
    INFO(d.r.out);
    CHECK(d.r.exit_code == 0);
    CHECK(failing_layers(d.report).empty());
    CHECK(kubelet.calls("Get") == 1);
    CHECK(statuses(d.report, "allocation", "/dev/accel0") == std::set<std::string>{"ok"});
    auto ok = messages(d.report, "allocation", "/dev/accel0", "ok");
    CHECK(any_contains(ok, "accel-claim"));
    CHECK(any_contains(ok, "example.com/accel=0"));
    CHECK(any_contains(messages(d.report, "allocation", "accel-claim", "info"), "example.com/accel=0"));
    // No checkpoint under this kubelet root: no device-plugin grant, said as info.
    CHECK(statuses(d.report, "allocation", "kubelet") == std::set<std::string>{"info"});
    CHECK(statuses(d.report, "node", "/dev/accel0") == std::set<std::string>{"ok"});
    CHECK(any_contains(messages(d.report, "node", "/dev/accel0", "ok"), "CDI `example.com/accel=0`"));
  }
  SECTION("a CDI device no spec file defines: allocation fails, naming it") {
    claim("example.com/accel=9");
    auto d = diagnose_trainer(specshim);
    INFO(d.r.out);
    CHECK(d.r.exit_code == 1);
    CHECK(kubelet.calls("Get") == 1);
    CHECK(failing_layers(d.report) == std::set<std::string>{"allocation"});
    CHECK(failing_subjects(d.report, "allocation") == std::set<std::string>{"example.com/accel=9"});
    auto failed = messages(d.report, "allocation", "example.com/accel=9", "fail");
    CHECK(any_contains(failed, "accel-claim"));
    CHECK(any_contains(failed, host.cdi.string()));
  }
}

TEST_CASE("diagnose allocation: a CRI container with nothing under the kubelet root gets info findings only") {
  TempDir elsewhere;
  SECTION("an empty kubelet root") {
    fs::create_directories(elsewhere / "kubelet");
  }
  SECTION("a kubelet root that does not exist") {}
  Host host(elsewhere / "kubelet");
  Running c(host.tmp / "c", cri_accel, "it-diag-alloc");
  Specshim specshim{c, host.config};

  auto d = diagnose_trainer(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 0);
  CHECK(failing_layers(d.report).empty());
  CHECK(statuses(d.report, "allocation") == std::set<std::string>{"info"});
  CHECK(any_contains(messages(d.report, "allocation", "kubelet", "info"), "no device manager checkpoint"));
  CHECK(any_contains(messages(d.report, "allocation", "DRA", "info"), "no PodResources socket"));
  CHECK(statuses(d.report, "node", "/dev/accel0") == std::set<std::string>{"ok"});
}

TEST_CASE("diagnose allocation: CDI names in a plugin's answer are judged by their nodes in the spec") {
  Host host;
  host.cdi_spec();
  host.grant_cdi("example.com/accel=0");

  SECTION("injected by the runtime with no annotation (containerd's CRI CDIDevices): ok") {
    Running c(host.tmp / "c", cri_accel, "it-diag-alloc");
    Specshim specshim{c, host.config};
    auto d = diagnose_trainer(specshim);
    INFO(d.r.out);
    CHECK(d.r.exit_code == 0);
    CHECK(failing_layers(d.report).empty());
    std::vector<std::string> ok;
    for (const auto& check : checks(d.report, "allocation"))
      if (check["status"] == "ok") ok.push_back(check["message"].get<std::string>());
    CHECK(any_contains(ok, "example.com/accel=0"));
    CHECK(statuses(d.report, "node", "/dev/accel0") == std::set<std::string>{"ok"});
  }
  SECTION("asked for by specshim's annotation, node injected: ok") {
    Running c(
        host.tmp / "c",
        [](BusyboxBundle& b) {
          cri(b);
          b.spec()["annotations"]["specshim.io/cdi-devices"] = "example.com/accel=0";
          accel(b);
        },
        "it-diag-alloc");
    Specshim specshim{c, host.config};
    auto d = diagnose_trainer(specshim);
    INFO(d.r.out);
    CHECK(d.r.exit_code == 0);
    CHECK(failing_layers(d.report).empty());
    CHECK(statuses(d.report, "allocation", "/dev/accel0") == std::set<std::string>{"ok"});
    CHECK(any_contains(messages(d.report, "allocation", "/dev/accel0", "ok"), "example.com/accel=0"));
  }
  SECTION("neither asked for nor injected: allocation fails, naming the CDI device") {
    Running c(host.tmp / "c", cri, "it-diag-alloc");
    Specshim specshim{c, host.config};
    auto d = diagnose_trainer(specshim);
    INFO(d.r.out);
    CHECK(d.r.exit_code == 1);
    CHECK(failing_layers(d.report).count("allocation") == 1);
    std::vector<std::string> failed;
    for (const auto& check : checks(d.report, "allocation"))
      if (check["status"] == "fail")
        failed.push_back(check["subject"].get<std::string>() + ": " + check["message"].get<std::string>());
    CHECK(any_contains(failed, "example.com/accel=0"));
  }
}

TEST_CASE("diagnose allocation: a kubelet with PodResources Get disabled still gives the DRA claims (List)") {
  Host host;
  host.cdi_spec();
  FakeKubelet kubelet(host.kubelet);
  kubelet.add_pod("team-a", "trainer", kUid, {{"main", {}}});
  ContainerAssignment claimed;
  claimed.dynamic_resources = {{"accel-claim",
                                "team-a",
                                {ClaimResource{.driver_name = "accel.example.com",
                                               .pool_name = "node",
                                               .device_name = "accel-0",
                                               .cdi_devices = {"example.com/accel=0"},
                                               .share_id = {}}}}};
  kubelet.assign("team-a", "trainer", "main", claimed);
  kubelet.disable_get();
  Running c(host.tmp / "c", cri_accel, "it-diag-alloc");
  Specshim specshim{c, host.config};

  auto d = diagnose_trainer(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 0);
  CHECK(d.report["status"] == "ok");
  CHECK(kubelet.calls("List") >= 1);
  CHECK(statuses(d.report, "allocation", "/dev/accel0") == std::set<std::string>{"ok"});
  CHECK(any_contains(messages(d.report, "allocation", "/dev/accel0", "ok"), "accel-claim"));
}

TEST_CASE("diagnose allocation: a hot-plugged GPU beyond the container's grant fails the allocation layer alone") {
  // The config knows example.com/accel (so the granted c 1:11 is an
  // accelerator) and a driver list under a fake proc: another pod's GPU, a
  // stand-in /dev/nvidia238 (c 1:12), which `specshim attach` gives the
  // container by hand (no bound in the config).
  Host host;
  host.grant();
  const std::string foreign = "GPU-0c0c0c0c-0000-1111-2222-333344445555";
  fs::path proc = host.tmp / "proc";
  StandInGpu gpu(proc, "0000:af:00.0", foreign, 238, 12);
  write_file(host.config, read_file(host.config) + "\n[[device-plugin.resources]]\nname = \"" + kResource +
                              "\"\nproviders = [\"kubelet\"]\n\n[hotplug]\nproc = \"" + proc.string() + "\"\n");
  FakeKubelet kubelet(host.kubelet);
  kubelet.add_pod("team-a", "trainer", kUid, {{"main", {{kResource, {"accel-0"}}}}});
  Running c(host.tmp / "c", granted_as_answered, "it-diag-alloc");
  Specshim specshim{c, host.config};

  auto d = diagnose_trainer(specshim);
  INFO(d.r.out);
  REQUIRE(d.r.exit_code == 0);
  CHECK(any_contains(messages(d.report, "allocation", "/dev/accel0", "ok"),
                     "(c 1:11, of `example.com/accel`), from the spec (linux.devices): granted to container `main` "
                     "of pod `team-a/trainer`"));

  auto a = specshim.attach({"--device", gpu.node() + ":/dev/accel-extra"});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  d = diagnose_trainer(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"allocation"});
  CHECK(failing_subjects(d.report, "allocation") == std::set<std::string>{"/dev/accel-extra"});
  auto failed = failing_messages(d.report, "allocation", "/dev/accel-extra");
  REQUIRE(failed.size() == 1);
  CHECK(failed[0] == gpu.node() + " (c 1:12, GPU " + foreign +
                         ", of the NVIDIA driver) opens here, from the hot-plug record (--device " + gpu.node() +
                         "), beyond the grant of container `main` of pod `team-a/trainer`: `example.com/accel` "
                         "accel-0 of container `main` (c 1:11)");
  auto hint = checks(d.report, "allocation", "/dev/accel-extra")[0]["hint"].get<std::string>();
  CHECK_THAT(hint, Catch::Contains("specshim detach"));
  CHECK(statuses(d.report, "hot-plug", "/dev/accel-extra") == std::set<std::string>{"ok"});
}

TEST_CASE("diagnose --all: of two pods granted the resource, names the one whose answer lacks require-env keys") {
  // Seed 002's recovery: two plugins registered one resource, and the pods
  // the wrong one answered for run without the limits the right one sets.
  // The checkpoint holds both answers; the config says what the right one
  // sets (require-env).
  const std::string other_uid = "0f6a1c2e-0000-4000-8000-0000000000d2";
  Host host;
  write_file(host.config, read_file(host.config) + "\n[[device-plugin.resources]]\nname = \"" + kResource +
                              "\"\nproviders = [\"kubelet\"]\nrequire-env = [\"ACCEL_MEMORY_LIMIT_*\"]\n");
  AllocateResponse right, wrong;
  right.devices = wrong.devices = {{"/dev/accel0", host.node.string(), "rw"}};
  right.envs = {{"ACCEL_VISIBLE", "0"}, {"ACCEL_MEMORY_LIMIT_0", "8g"}};
  wrong.envs = {{"ACCEL_VISIBLE", "1"}};
  write_checkpoint(host.kubelet,
                   {{kUid, "main", kResource, {{"0", {"accel-0"}}}, right},
                    {other_uid, "main", kResource, {{"0", {"accel-1"}}}, wrong}},
                   {}, CheckpointLayout::numa);
  fs::path root = host.tmp / "runc-root";
  Running limited(
      host.tmp / "a",
      [](BusyboxBundle& b) {
        cri_accel(b);
        env(b, {"ACCEL_VISIBLE=0", "ACCEL_MEMORY_LIMIT_0=8g"});
      },
      "it-diag-all", root);
  Running unlimited(
      host.tmp / "b",
      [&](BusyboxBundle& b) {
        cri_accel(b);
        b.spec()["annotations"]["io.kubernetes.cri.sandbox-name"] = "other";
        b.spec()["annotations"]["io.kubernetes.cri.sandbox-uid"] = other_uid;
        env(b, {"ACCEL_VISIBLE=1"});
      },
      "it-diag-all", root);
  Running sandbox(
      host.tmp / "s", [](BusyboxBundle& b) { b.spec()["annotations"]["io.kubernetes.cri.container-type"] = "sandbox"; },
      "it-diag-all", root);

  auto run = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {SPECSHIM_BINARY, "diagnose",          "--all", "--root", root.string(),
                                     "--config",      host.config.string()};
    args.insert(args.end(), more.begin(), more.end());
    return run_process(args);
  };
  auto r = run({"--format", "json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  std::map<std::string, Json> reports;
  for (const auto& report : Json::parse(r.out)) reports[report["container"]] = report;
  REQUIRE(reports.size() == 2);  // the sandbox is not inspected
  CHECK(failing_layers(reports.at(limited.id())).empty());
  CHECK(statuses(reports.at(limited.id()), "allocation", kResource).count("ok") == 1);
  const Json& bad = reports.at(unlimited.id());
  CHECK(failing_layers(bad) == std::set<std::string>{"allocation"});
  CHECK(failing_subjects(bad, "allocation") == std::set<std::string>{kResource});
  auto failed = messages(bad, "allocation", kResource, "fail");
  CHECK(any_contains(failed, "no env ACCEL_MEMORY_LIMIT_*"));
  CHECK(any_contains(failed, "the plugin that answered set ACCEL_VISIBLE"));

  auto text = run({});
  INFO(text.out);
  CHECK(text.exit_code == 1);
  CHECK(text.out.find(unlimited.id() + "  team-a/other/main  FAIL  (allocation)") != std::string::npos);
  CHECK(text.out.find(limited.id() + "  team-a/trainer/main  ") != std::string::npos);
  CHECK(text.out.find("2 containers: 1 failed, ") != std::string::npos);
}
