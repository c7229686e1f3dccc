// SPDX-License-Identifier: Apache-2.0
// specshim diagnose on running runc containers (busybox, as root, created by
// runc directly, not through specshim): a healthy container passes, and a
// container broken in exactly one layer (node, cgroup, companions, identity,
// hot-plug) fails in that layer alone, naming the subject; --pod finds a
// pod's container by its CRI annotations; a container that cannot be
// inspected exits 2 with one line. The device is test/support's c 1:11
// HostDevice numbers, which runc's default rules do not cover, given as a
// linux.devices entry (runc makes the node) with its allow rule.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "bpf_object.h"
#include "container.h"
#include "diagnose_report.h"
#include "host_device.h"
#include "running.h"
#include "specshim/base/spec.h"
#include "specshim/live/cgroup_devices.h"
#include "specshim/live/device_rules.h"
#include "tempdir.h"
#include "verb_error.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using specshim::Json;

namespace {

// Host is the host side: the 1:11 node (for attach) and specshim's config.
struct Host : HostDevice {
  fs::path config = tmp / "specshim.toml";
  Host() { write_file(config, "[runtime]\npath = \"/usr/sbin/runc\"\n"); }
};

// device adds a linux.devices entry (mode 0666, root's) and, with rule, its
// rwm allow rule in linux.resources.devices.
void device(BusyboxBundle& b, const std::string& path, int major, int minor, bool rule = true) {
  b.spec()["linux"]["devices"].push_back(
      {{"path", path}, {"type", "c"}, {"major", major}, {"minor", minor}, {"fileMode", 0666}, {"uid", 0}, {"gid", 0}});
  if (rule)
    b.spec()["linux"]["resources"]["devices"].push_back(
        {{"allow", true}, {"type", "c"}, {"major", major}, {"minor", minor}, {"access", "rwm"}});
}

// accel is the healthy container's edit: /dev/accel0 c 1:11 with its rule.
void accel(BusyboxBundle& b) {
  device(b, "/dev/accel0", 1, 11);
}

// inspect_error: diagnose could not inspect the container (exit 2), and says
// why in one line on stderr.
void inspect_error(const ProcessResult& r, const std::string& want) {
  one_line_error(r, want, 2);
}

// Sysfs is a fake sysfs tree (--sysfs) with IOMMU group 7 holding PCI
// devices bound to drivers, laid out as the kernel's: the group's entries
// are relative symlinks to the device directories, whose `driver` is a
// relative symlink to bus/pci/drivers/NAME.
struct Sysfs {
  TempDir tmp;
  fs::path root = tmp / "sys";

  void pci(const std::string& address, const std::string& driver) const {
    fs::create_directories(root / "bus/pci/drivers" / driver);
    fs::path dev = root / "devices/pci0000:00" / address;
    fs::create_directories(dev);
    fs::create_symlink("../../../bus/pci/drivers/" + driver, dev / "driver");
    fs::create_directories(root / "kernel/iommu_groups/7/devices");
    fs::create_symlink("../../../../devices/pci0000:00/" + address, root / "kernel/iommu_groups/7/devices" / address);
  }
};

// vfio is the edit of a container given IOMMU group 7: /dev/vfio/7 (with
// 1:11's numbers; diagnose reads the group from the path) and /dev/vfio/vfio
// (10:196: runc makes it from the numbers, the host need not have it), both
// with rules.
void vfio(BusyboxBundle& b) {
  device(b, "/dev/vfio/7", 1, 11);
  device(b, "/dev/vfio/vfio", 10, 196);
}

// pod_annotations are CRI's annotations of a container in pod dev/box-7.
void pod_annotations(BusyboxBundle& b, const std::string& type, const std::string& name) {
  b.spec()["annotations"] = {{"io.kubernetes.cri.container-type", type},
                             {"io.kubernetes.cri.sandbox-namespace", "dev"},
                             {"io.kubernetes.cri.sandbox-name", "box-7"},
                             {"io.kubernetes.cri.sandbox-id", "5ca1ab1e"}};
  if (type == "container") b.spec()["annotations"]["io.kubernetes.cri.container-name"] = name;
}

}  // namespace

TEST_CASE("diagnose: a healthy container passes, its node and cgroup checks ok") {
  Host host;
  Running c(host.tmp / "c", accel, "it-diag");
  Specshim specshim{c, host.config};
  REQUIRE(c.sh("(: > /dev/accel0) && echo open-ok") == "open-ok\n");

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 0);
  CHECK((d.report["status"] == "ok" || d.report["status"] == "warn"));
  CHECK(d.report["container"] == c.id());
  CHECK(d.report["pod"].is_null());
  CHECK(failing_layers(d.report).empty());
  CHECK(statuses(d.report, "node", "/dev/accel0") == std::set<std::string>{"ok"});
  CHECK(statuses(d.report, "cgroup", "/dev/accel0") == std::set<std::string>{"ok"});
}

TEST_CASE("diagnose: a node removed inside the container fails the node layer alone") {
  Host host;
  Running c(host.tmp / "c", accel, "it-diag");
  Specshim specshim{c, host.config};
  REQUIRE(c.exec({"/bin/rm", "/dev/accel0"}).exit_code == 0);

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(d.report["status"] == "fail");
  CHECK(failing_layers(d.report) == std::set<std::string>{"node"});
  CHECK(failing_subjects(d.report, "node") == std::set<std::string>{"/dev/accel0"});
}

TEST_CASE("diagnose: a node with other numbers than the spec entry fails the node layer, naming them") {
  Host host;
  Running c(host.tmp / "c", accel, "it-diag");
  Specshim specshim{c, host.config};
  REQUIRE(c.sh("rm /dev/accel0 && mknod -m 666 /dev/accel0 c 1 7 && stat -c '%t:%T' /dev/accel0") == "1:7\n");

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"node"});
  CHECK(failing_subjects(d.report, "node") == std::set<std::string>{"/dev/accel0"});
  CHECK(any_contains(failing_messages(d.report, "node", "/dev/accel0"), "1:7"));
}

TEST_CASE("diagnose: a node without an allow rule fails the cgroup layer alone, naming devices.list") {
  Host host;
  Running c(
      host.tmp / "c", [](BusyboxBundle& b) { device(b, "/dev/accel0", 1, 11, false); }, "it-diag");
  Specshim specshim{c, host.config};
  REQUIRE_FALSE(c.rule_allows());
  REQUIRE(specshim::live::cgroup_places(c.pid()).v1_devices);

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"cgroup"});
  CHECK(failing_subjects(d.report, "cgroup") == std::set<std::string>{"/dev/accel0"});
  CHECK(any_contains(failing_messages(d.report, "cgroup", "/dev/accel0"), "devices.list"));
}

TEST_CASE("diagnose: a device program on the cgroup2 directory that denies the node fails, naming it") {
  // On this hybrid host runc confines devices through v1 only and attaches no
  // program to the container's cgroup2 directory (attach_test.cpp). The
  // program runc would attach on a v2 host (the spec's rules and runc's
  // defaults, without 1:11), attached here, makes the v2 side deny as well.
  namespace live = specshim::live;
  Host host;
  Running c(
      host.tmp / "c", [](BusyboxBundle& b) { device(b, "/dev/accel0", 1, 11, false); }, "it-diag");
  Specshim specshim{c, host.config};
  live::CgroupPlaces places = live::cgroup_places(c.pid());
  REQUIRE(places.unified);
  REQUIRE(live::attached_device_programs(*places.unified).empty());
  struct Attached {
    live::Undo undo;
    ~Attached() {
      try {
        if (undo) undo();
      } catch (...) {
      }
    }
  } program{live::replace_device_program(
      *places.unified, live::container_rules(specshim::Spec::parse(read_file(c.bundle().dir() / "config.json"))))};
  REQUIRE(live::attached_device_programs(*places.unified).size() == 1);
  REQUIRE_FALSE(c.rule_allows());

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"cgroup"});
  CHECK(failing_subjects(d.report, "cgroup") == std::set<std::string>{"/dev/accel0"});
  auto messages = failing_messages(d.report, "cgroup", "/dev/accel0");
  CHECK(any_contains(messages, "devices.list"));
  CHECK(any_contains(messages, "device program"));
}

TEST_CASE("diagnose: a uid without a line in the container's /etc/passwd fails the identity layer alone") {
  Host host;
  Running c(
      host.tmp / "c",
      [](BusyboxBundle& b) {
        accel(b);
        b.set_user(4242, 0);
      },
      "it-diag");
  Specshim specshim{c, host.config};

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"identity"});
  CHECK(failing_subjects(d.report, "identity") == std::set<std::string>{"uid 4242"});
  CHECK(any_contains(failing_messages(d.report, "identity", "uid 4242"), "/etc/passwd"));
  CHECK(statuses(d.report, "node", "/dev/accel0") == std::set<std::string>{"ok"});
}

TEST_CASE("diagnose: a VFIO group with a device not bound to vfio-pci fails the companions layer, naming the driver") {
  Host host;
  Sysfs sysfs;
  sysfs.pci("0000:00:01.1", "vfio-pci");
  Running c(host.tmp / "c", vfio, "it-diag");
  Specshim specshim{c, host.config};

  SECTION("one device bound to e1000e") {
    sysfs.pci("0000:00:01.0", "e1000e");
    auto d = diagnose(specshim, {"--sysfs", sysfs.root.string(), c.id()});
    INFO(d.r.out);
    CHECK(d.r.exit_code == 1);
    CHECK(failing_layers(d.report) == std::set<std::string>{"companions"});
    CHECK(failing_subjects(d.report, "companions") == std::set<std::string>{"0000:00:01.0"});
    CHECK(any_contains(failing_messages(d.report, "companions", "0000:00:01.0"), "e1000e"));
  }
  SECTION("both bound to vfio-pci") {
    sysfs.pci("0000:00:01.0", "vfio-pci");
    auto d = diagnose(specshim, {"--sysfs", sysfs.root.string(), c.id()});
    INFO(d.r.out);
    CHECK(d.r.exit_code == 0);
    CHECK(failing_layers(d.report).empty());
    CHECK(statuses(d.report, "node", "/dev/vfio/7") == std::set<std::string>{"ok"});
    CHECK(statuses(d.report, "node", "/dev/vfio/vfio") == std::set<std::string>{"ok"});
  }
}

TEST_CASE("diagnose: an NVIDIA GPU node without /dev/nvidiactl fails the companions layer alone") {
  Host host;
  Running c(
      host.tmp / "c", [](BusyboxBundle& b) { device(b, "/dev/nvidia0", 1, 11); }, "it-diag");
  Specshim specshim{c, host.config};

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"companions"});
  auto subjects = failing_subjects(d.report, "companions");
  CHECK(subjects.count("/dev/nvidiactl") == 1);
  CHECK(statuses(d.report, "node", "/dev/nvidia0") == std::set<std::string>{"ok"});
}

TEST_CASE("diagnose: an Ascend NPU without /dev/davinci_manager fails the companions layer alone") {
  Host host;
  // The NPU and two of its three companions, as a device plugin with
  // useAscendDocker=false hands them over; the manager node is missing.
  Running c(
      host.tmp / "c",
      [](BusyboxBundle& b) {
        for (const char* path : {"/dev/davinci0", "/dev/devmm_svm", "/dev/hisi_hdc"}) device(b, path, 1, 11);
      },
      "it-diag");
  Specshim specshim{c, host.config};

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"companions"});
  CHECK(failing_subjects(d.report, "companions") == std::set<std::string>{"/dev/davinci_manager"});
  CHECK(statuses(d.report, "node", "/dev/davinci0") == std::set<std::string>{"ok"});
  CHECK(statuses(d.report, "cgroup", "/dev/davinci0") == std::set<std::string>{"ok"});
}

TEST_CASE("diagnose --pod: a pod's container found by its CRI annotations, never the sandbox") {
  Host host;
  fs::path root = host.tmp / "runc-root";
  Running main(
      host.tmp / "main", [](BusyboxBundle& b) { pod_annotations(b, "container", "main"); }, "it-diag", root);
  Running side(
      host.tmp / "side", [](BusyboxBundle& b) { pod_annotations(b, "container", "side"); }, "it-diag", root);
  Running sandbox(
      host.tmp / "sandbox", [](BusyboxBundle& b) { pod_annotations(b, "sandbox", ""); }, "it-diag", root);
  Specshim specshim{main, host.config};

  SECTION("two containers match: exit 2, both named") {
    auto r = specshim("diagnose", {"--format", "json", "--pod", "dev/box-7"});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(main.id()));
    CHECK_THAT(r.err, Contains(side.id()));
    CHECK_THAT(r.err, Contains("main"));
    CHECK_THAT(r.err, Contains("side"));
    CHECK_THAT(r.err, !Contains(sandbox.id()));
  }
  SECTION("--container picks one") {
    auto d = diagnose(specshim, {"--pod", "dev/box-7", "--container", "side"});
    INFO(d.r.out << d.r.err);
    CHECK(d.r.exit_code == 0);
    CHECK(d.report["container"] == side.id());
    REQUIRE(d.report["pod"].is_object());
    CHECK(d.report["pod"].size() == 3);
    CHECK(d.report["pod"]["namespace"] == "dev");
    CHECK(d.report["pod"]["name"] == "box-7");
    CHECK(d.report["pod"]["container"] == "side");
  }
  SECTION("no match: exit 2") {
    inspect_error(specshim("diagnose", {"--format", "json", "--pod", "dev/nope"}), "dev/nope");
  }
}

TEST_CASE("diagnose: a node attached by specshim attach and removed since fails the hot-plug layer alone") {
  Host host;
  Running c(host.tmp / "c", accel, "it-diag");
  Specshim specshim{c, host.config};
  auto a = specshim.attach({"--device", host.node.string() + ":/dev/hp0"});
  INFO(a.err);
  REQUIRE(a.exit_code == 0);
  REQUIRE(diagnose(specshim).r.exit_code == 0);
  REQUIRE(c.exec({"/bin/rm", "/dev/hp0"}).exit_code == 0);

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"hot-plug"});
  CHECK(failing_subjects(d.report, "hot-plug") == std::set<std::string>{"/dev/hp0"});
}

TEST_CASE("diagnose: a stopped or unknown container cannot be inspected: exit 2, one line naming it") {
  Host host;
  TempDir tmp;
  fs::path root = tmp / "root";
  fs::create_directories(root);
  auto run = [&](const std::string& id) {
    return run_process({SPECSHIM_BINARY, "diagnose", "--root", root.string(), "--config", host.config.string(),
                        "--format", "json", id});
  };
  SECTION("stopped") {
    BusyboxBundle b(tmp / "bundle");
    b.set_args({"/bin/true"});
    b.save();
    std::string id = unique_id("it-diag-stopped");
    REQUIRE(
        run_process({kRunc, "--root", root.string(), "run", "--keep", "--bundle", b.dir().string(), id}).exit_code ==
        0);
    auto r = run(id);
    run_process({kRunc, "--root", root.string(), "delete", "--force", id});
    inspect_error(r, id);
  }
  SECTION("unknown") {
    inspect_error(run("no-such-container"), "no-such-container");
  }
}

TEST_CASE("diagnose --format text: lines per check, and the hint of a failing one") {
  Host host;
  SECTION("healthy") {
    Running c(host.tmp / "c", accel, "it-diag");
    Specshim specshim{c, host.config};
    auto r = specshim("diagnose", {c.id()});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    bool node_ok = false;
    std::size_t start = 0;
    while (start < r.out.size()) {
      auto end = r.out.find('\n', start);
      std::string line = r.out.substr(start, end - start);
      if (line.find("node") != std::string::npos && line.find("ok") != std::string::npos) node_ok = true;
      if (end == std::string::npos) break;
      start = end + 1;
    }
    CHECK(node_ok);
  }
  SECTION("a node removed: the failing check's hint is printed") {
    Running c(host.tmp / "c", accel, "it-diag");
    Specshim specshim{c, host.config};
    REQUIRE(c.exec({"/bin/rm", "/dev/accel0"}).exit_code == 0);
    auto d = diagnose(specshim);
    std::string hint;
    for (const auto& check : checks(d.report, "node", "/dev/accel0"))
      if (check["status"] == "fail") hint = check["hint"].get<std::string>();
    REQUIRE_FALSE(hint.empty());
    auto r = specshim("diagnose", {"--format", "text", c.id()});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.out, Contains(hint));
    CHECK_THAT(r.out, Contains("/dev/accel0"));
  }
}

TEST_CASE("diagnose: another agent's device program that denies a node the spec allows fails, naming its id") {
  // The spec allows /dev/accel0 (v1 agrees), but a clang-built program an
  // operator attached to the container's cgroup2 directory denies 1:11: the
  // open fails, and diagnose runs the kernel's copy of that program to say so.
  namespace live = specshim::live;
  Host host;
  Running c(host.tmp / "c", accel, "it-diag");
  Specshim specshim{c, host.config};
  live::CgroupPlaces places = live::cgroup_places(c.pid());
  REQUIRE(places.unified);
  const std::string open_rw = "(: > /dev/accel0) 2>/dev/null && echo open-ok || echo open-failed";
  REQUIRE(c.sh(open_rw) == "open-ok\n");
  AttachedBpfObject deny(*places.unified, deny_1_11_object());
  REQUIRE(c.sh(open_rw) == "open-failed\n");

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"cgroup"});
  auto messages = failing_messages(d.report, "cgroup", "/dev/accel0");
  REQUIRE(messages.size() == 1);
  CHECK_THAT(messages[0], Contains("device program " + std::to_string(deny.id())));
  CHECK(statuses(d.report, "cgroup", "/dev/accel0") == std::set<std::string>{"ok", "fail"});  // v1 allows it
}

TEST_CASE("diagnose: read from one rule and write from another is no read-write open, as the kernel decides") {
  // open(O_RDWR) asks for r and w at once: the v1 controller needs one
  // exception holding both; "c 240:* r" and "c 240:0 w" each hold one. Major
  // 240 (local/experimental) has no driver: an open the cgroup lets through
  // fails with ENXIO, one it refuses with EPERM.
  Host host;
  Running c(
      host.tmp / "c",
      [](BusyboxBundle& b) {
        device(b, "/dev/local0", 240, 0, false);
        auto& rules = b.spec()["linux"]["resources"]["devices"];
        rules.push_back({{"allow", true}, {"type", "c"}, {"major", 240}, {"access", "r"}});
        rules.push_back({{"allow", true}, {"type", "c"}, {"major", 240}, {"minor", 0}, {"access", "w"}});
      },
      "it-diag");
  Specshim specshim{c, host.config};
  std::string probe = c.sh("(: < /dev/local0) 2>&1; (: > /dev/local0) 2>&1; (: <> /dev/local0) 2>&1; true");
  REQUIRE(probe ==
          "/bin/sh: can't open /dev/local0: No such device or address\n"
          "/bin/sh: can't create /dev/local0: No such device or address\n"
          "/bin/sh: can't create /dev/local0: Operation not permitted\n");

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_layers(d.report) == std::set<std::string>{"cgroup"});
  CHECK(any_contains(failing_messages(d.report, "cgroup", "/dev/local0"), "does not allow c 240:0 rw"));
}

TEST_CASE("diagnose: a CDI request the create did not inject fails the spec layer, one no spec file defines warns") {
  Host host;
  fs::path cdi = host.tmp / "cdi";
  write_file(cdi / "accel.yaml",
             "cdiVersion: 0.5.0\nkind: example.com/accel\ndevices:\n- name: \"0\"\n"
             "  containerEdits:\n    deviceNodes:\n    - path: /dev/accel0\n      hostPath: " +
                 host.node.string() + "\n");
  write_file(host.config, "[runtime]\npath = \"/usr/sbin/runc\"\n\n[cdi]\nspec-dirs = [\"" + cdi.string() + "\"]\n");
  Running c(
      host.tmp / "c",
      [](BusyboxBundle& b) { b.spec()["annotations"]["cdi.k8s.io/test"] = "example.com/accel=0,example.com/accel=9"; },
      "it-diag");
  Specshim specshim{c, host.config};

  auto d = diagnose(specshim);
  INFO(d.r.out);
  CHECK(d.r.exit_code == 1);
  CHECK(failing_subjects(d.report, "spec") == std::set<std::string>{"/dev/accel0"});
  CHECK(any_contains(failing_messages(d.report, "spec", "/dev/accel0"), "CDI `example.com/accel=0` asks for node"));
  CHECK(statuses(d.report, "spec", "example.com/accel=9") == std::set<std::string>{"warn"});
  // The missing node and its missing rule are what the spec's gap does to the container.
  CHECK(failing_layers(d.report) == std::set<std::string>{"spec", "node", "cgroup"});
}
