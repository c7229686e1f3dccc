// SPDX-License-Identifier: Apache-2.0
// specshim reconcile on running runc containers (busybox, as root), one pass
// at a time: the desired-state file's wants are attached, dropped ones
// detached, hand-made attaches survive, GPUs by UUID, shared devices, and a
// bad file changes nothing. The device is a c 1:11 node in a temp dir on the
// host (test/support/host_device.h): runc's default rules do not cover it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "container.h"
#include "reconcile_support.h"
#include "running.h"
#include "specshim/base/spec.h"
#include "verb_error.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using Catch::EndsWith;
using Catch::StartsWith;
using specshim::Json;

namespace {

// lines are text's lines, sorted: the containers of a pass come in runc's order.
std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l + "\n");
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("reconcile: a container the file selects by id gets the device, and loses it once the file drops it") {
  Host host;
  Running c(host.tmp / "c");
  Specshim specshim{c, host.config};
  write_file(host.desired,
             "containers:\n  - id: " + c.id() + "\n    devices: [\"" + host.node.string() + ":/dev/kmsg-test:rw\"]\n");
  auto r = specshim("reconcile", {});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "container `" + c.id() + "`: attached /dev/kmsg-test (c 1:11 rw, mknod) for device " +
                     host.node.string() + ":/dev/kmsg-test:rw\n");
  CHECK(c.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  Json rec = specshim.attached();
  CHECK(rec["devices"][0]["reconcile"] == Json::array({"device " + host.node.string() + ":/dev/kmsg-test:rw"}));

  r = specshim("reconcile", {});
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());

  write_file(host.desired, "containers: []\n");
  r = specshim("reconcile", {});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "container `" + c.id() + "`: detached /dev/kmsg-test (c 1:11)\n");
  CHECK(c.exec(opens("/dev/kmsg-test")).out == "open-failed\n");
  CHECK_FALSE(c.rule_allows());
}

TEST_CASE("reconcile: one pass attaches to a pod's container selected by CRI annotations and to one selected by id") {
  Host host;
  Running a(host.tmp / "a", in_pod("container", "main"), "it-rec", host.root);
  Running side(host.tmp / "side", in_pod("container", "side"), "it-rec", host.root);
  Running b(host.tmp / "b", {}, "it-rec", host.root);
  std::string key_a = "device " + host.node.string() + ":/dev/kmsg-test:rw";
  std::string key_b = "device " + host.other.string() + ":/dev/kmsg-test:rwm";
  host.want(std::string("containers:\n") + "  - pod: " + kPod + "\n    shared: true\n    devices: [\"" +
            host.node.string() + ":/dev/kmsg-test:rw\"]\n" + "  - id: " + b.id() +
            "\n    shared: true\n    devices: [\"" + host.other.string() + ":/dev/kmsg-test\"]\n");
  REQUIRE(a.exec(opens("/dev/kmsg-test")).out == "open-failed\n");

  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(lines(r.out) == sorted({attached(by_pod(a.id()), "/dev/kmsg-test", "rw", key_a),
                                attached(by_id(b.id()), "/dev/kmsg-test", "rwm", key_b)}));
  CHECK(a.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  CHECK(b.exec(opens("/dev/kmsg-test")).out == "open-ok\n");
  CHECK(b.rule_allows());
  // The pod's other container (container-name `side`) is not the entry's.
  CHECK(side.exec(opens("/dev/kmsg-test")).out == "open-failed\n");
  CHECK_FALSE(fs::exists(side.record()));

  Json rec_a = Specshim{a, host.config}.attached();
  REQUIRE(rec_a["devices"].size() == 1);
  CHECK(rec_a["devices"][0]["reconcile"] == Json::array({key_a}));
  CHECK(rec_a["devices"][0]["direct"] == false);
  CHECK(rec_a["devices"][0]["permissions"] == "rw");
  CHECK(rec_a["devices"][0]["hostPath"] == fs::canonical(host.node).string());
  Json rec_b = Specshim{b, host.config}.attached();
  REQUIRE(rec_b["devices"].size() == 1);
  CHECK(rec_b["devices"][0]["reconcile"] == Json::array({key_b}));
  CHECK(rec_b["devices"][0]["hostPath"] == fs::canonical(host.other).string());

  auto again = host.reconcile();
  CHECK(again.exit_code == 0);
  CHECK(again.out.empty());
  CHECK(again.err.empty());
}

TEST_CASE("reconcile: the file losing one of two devices detaches only that one, the rule stays while one holds it") {
  // Both are c 1:11 at two container paths, /dev/kmsg-a rwm and /dev/kmsg-b
  // rw: one cgroup rule's numbers. Dropping a takes its node only; rw stays
  // b's, so a node the container makes itself still opens. Dropping b then
  // revokes it.
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  Specshim specshim{c, host.config};
  std::string a = host.node.string() + ":/dev/kmsg-a", b = host.node.string() + ":/dev/kmsg-b:rw";
  auto want = [&](const std::vector<std::string>& devices) {
    std::string list;
    for (const auto& d : devices) list += (list.empty() ? "\"" : ", \"") + d + "\"";
    host.want("containers:\n  - id: " + c.id() + "\n    devices: [" + list + "]\n");
  };
  want({a, b});
  REQUIRE_FALSE(c.rule_allows());
  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == attached(by_id(c.id()), "/dev/kmsg-a", "rwm", "device " + a + ":rwm") +
                     attached(by_id(c.id()), "/dev/kmsg-b", "rw", "device " + b));
  CHECK(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
  CHECK(c.exec(opens("/dev/kmsg-b")).out == "open-ok\n");
  CHECK(c.rule_allows());

  want({b});
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == detached(by_id(c.id()), "/dev/kmsg-a"));
  CHECK(gone(c, "/dev/kmsg-a"));
  CHECK(c.exec(opens("/dev/kmsg-a")).out == "open-failed\n");
  CHECK(c.exec(opens("/dev/kmsg-b")).out == "open-ok\n");
  CHECK(c.rule_allows());  // b still holds c 1:11 rw
  Json rec = specshim.attached();
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["path"] == "/dev/kmsg-b");
  CHECK(rec["devices"][0]["reconcile"] == Json::array({"device " + b}));

  want({});
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == detached(by_id(c.id()), "/dev/kmsg-b"));
  CHECK(gone(c, "/dev/kmsg-b"));
  CHECK_FALSE(c.rule_allows());
  CHECK(specshim.attached()["devices"].empty());
}

TEST_CASE("reconcile: a hand-made attach survives, a device also attached by hand is released and stays until detach") {
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  Specshim specshim{c, host.config};
  std::string node = host.node.string();
  std::string both_key = "device " + node + ":/dev/kmsg-both:rwm", rec_key = "device " + node + ":/dev/kmsg-rec:rwm";
  REQUIRE(specshim.attach({"--device", node + ":/dev/kmsg-hand"}).exit_code == 0);
  REQUIRE(specshim.attach({"--device", node + ":/dev/kmsg-both"}).exit_code == 0);

  host.want("containers:\n  - id: " + c.id() + "\n    devices: [\"" + node + ":/dev/kmsg-both\", \"" + node +
            ":/dev/kmsg-rec\"]\n");
  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == attached(by_id(c.id()), "/dev/kmsg-rec", "rwm", rec_key) + by_id(c.id()) + ": " + both_key +
                     ": already there; recorded as reconcile's\n");
  for (const char* p : {"/dev/kmsg-hand", "/dev/kmsg-both", "/dev/kmsg-rec"})
    CHECK(c.exec(opens(p)).out == "open-ok\n");
  Json rec = specshim.attached();
  REQUIRE(rec["devices"].size() == 3);
  CHECK(rec["devices"][0]["path"] == "/dev/kmsg-hand");
  CHECK(rec["devices"][0]["direct"] == true);
  CHECK_FALSE(rec["devices"][0].contains("reconcile"));
  CHECK(rec["devices"][1]["path"] == "/dev/kmsg-both");
  CHECK(rec["devices"][1]["direct"] == true);
  CHECK(rec["devices"][1]["reconcile"] == Json::array({both_key}));
  CHECK(rec["devices"][2]["path"] == "/dev/kmsg-rec");
  CHECK(rec["devices"][2]["direct"] == false);
  CHECK(rec["devices"][2]["reconcile"] == Json::array({rec_key}));

  // What only reconcile holds is not detached by hand.
  auto d = specshim.detach({"--device", "/dev/kmsg-rec"});
  INFO(d.err);
  CHECK(d.exit_code == 1);
  CHECK_THAT(d.err, Contains("device `/dev/kmsg-rec` was attached by reconcile (" + rec_key +
                             "); remove it from the desired-state file"));
  CHECK(c.exec(opens("/dev/kmsg-rec")).out == "open-ok\n");

  host.want("containers: []\n");
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == detached(by_id(c.id()), "/dev/kmsg-rec") + by_id(c.id()) + ": " + both_key +
                     ": released; /dev/kmsg-both stays, held by --device " + fs::canonical(host.node).string() + "\n");
  CHECK(gone(c, "/dev/kmsg-rec"));
  CHECK(c.exec(opens("/dev/kmsg-hand")).out == "open-ok\n");
  CHECK(c.exec(opens("/dev/kmsg-both")).out == "open-ok\n");
  rec = specshim.attached();
  REQUIRE(rec["devices"].size() == 2);
  CHECK(rec["devices"][1]["path"] == "/dev/kmsg-both");
  CHECK(rec["devices"][1]["direct"] == true);
  CHECK_FALSE(rec["devices"][1].contains("reconcile"));
  auto again = host.reconcile();
  CHECK(again.exit_code == 0);
  CHECK(again.out.empty());

  d = specshim.detach({"--device", "/dev/kmsg-both"});
  INFO(d.err);
  REQUIRE(d.exit_code == 0);
  CHECK(d.out == "detached /dev/kmsg-both (c 1:11)\n");
  CHECK(gone(c, "/dev/kmsg-both"));
  CHECK(c.exec(opens("/dev/kmsg-hand")).out == "open-ok\n");
  REQUIRE(specshim.detach({"--device", "/dev/kmsg-hand"}).exit_code == 0);
  CHECK_FALSE(c.rule_allows());
}

TEST_CASE("reconcile: a container whose entry is removed loses only what reconcile gave it") {
  Host host;
  Running a(host.tmp / "a", in_pod("container", "main"), "it-rec", host.root);
  Running b(host.tmp / "b", {}, "it-rec", host.root);
  Specshim on_a{a, host.config};
  REQUIRE(on_a.attach({"--device", host.node.string() + ":/dev/kmsg-hand"}).exit_code == 0);
  std::string entry_b =
      "  - id: " + b.id() + "\n    shared: true\n    devices: [\"" + host.other.string() + ":/dev/kmsg-r\"]\n";
  host.want(std::string("containers:\n  - pod: ") + kPod + "\n    shared: true\n    devices: [\"" + host.node.string() +
            ":/dev/kmsg-r\"]\n" + entry_b);
  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(lines(r.out).size() == 2);
  REQUIRE(a.exec(opens("/dev/kmsg-r")).out == "open-ok\n");
  std::string b_before = read_file(b.record());

  host.want("containers:\n" + entry_b);
  r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == detached(by_id(a.id()), "/dev/kmsg-r"));
  CHECK(r.err.empty());
  CHECK(gone(a, "/dev/kmsg-r"));
  CHECK(a.exec(opens("/dev/kmsg-hand")).out == "open-ok\n");
  CHECK(a.rule_allows());  // the hand-made attach's rule
  Json rec = on_a.attached();
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["path"] == "/dev/kmsg-hand");
  CHECK(rec["devices"][0]["direct"] == true);
  CHECK(b.exec(opens("/dev/kmsg-r")).out == "open-ok\n");
  CHECK(read_file(b.record()) == b_before);
}

TEST_CASE("reconcile: a GPU named by UUID is attached, an unknown UUID fails its container only") {
  // A stand-in /dev/nvidia248 (not attach_test's /dev/nvidia250, which may
  // exist at the same time), and a driver list under a fake --proc.
  Host host;
  fs::path proc = host.tmp / "proc";
  const std::string known = "GPU-0a1b2c3d-0000-1111-2222-333344445555";
  StandInGpu gpu(proc, "0000:3b:00.0", known, 248);
  list_gpu(proc, "0000:af:00.0", "GPU-ffff0000-0000-1111-2222-333344445555", 251);
  const std::string node = gpu.node();
  Running good(host.tmp / "good", {}, "it-rec", host.root);
  Running bad(host.tmp / "bad", {}, "it-rec", host.root);
  host.want("containers:\n  - id: " + good.id() + "\n    gpus: [\"" + known + "\"]\n  - id: " + bad.id() +
            "\n    gpus: [\"GPU-99\"]\n");
  REQUIRE(good.exec(opens(node)).out == "open-failed\n");

  auto r = host.reconcile({"--proc", proc.string()});
  one_line_error(r, "specshim reconcile: container `" + bad.id() + "`: GPU `GPU-99`: no such GPU in " +
                        (proc / "driver/nvidia/gpus").string() + "; it has " + known +
                        " (/dev/nvidia248), GPU-ffff0000-0000-1111-2222-333344445555 (/dev/nvidia251)");
  CHECK_THAT(r.err, StartsWith("specshim reconcile: container `" + bad.id() + "`"));
  CHECK(r.out == attached(by_id(good.id()), node, "rwm", "gpu " + known));
  CHECK(good.exec(opens(node)).out == "open-ok\n");
  Json rec = Specshim{good, host.config}.attached();
  REQUIRE(rec["devices"].size() == 1);
  CHECK(rec["devices"][0]["path"] == node);
  CHECK(rec["devices"][0]["hostPath"] == node);
  CHECK(rec["devices"][0]["reconcile"] == Json::array({"gpu " + known}));
  CHECK(bad.exec(opens(node)).out == "open-failed\n");
  CHECK_FALSE(fs::exists(bad.record()));

  // The GPU dropped: its node goes.
  host.want("containers:\n  - id: " + bad.id() + "\n    gpus: [\"GPU-99\"]\n");
  r = host.reconcile({"--proc", proc.string()});
  CHECK(r.exit_code == 1);
  CHECK(r.out == detached(by_id(good.id()), node));
  CHECK(good.exec(opens(node)).out == "open-failed\n");
}

TEST_CASE("reconcile: a malformed or conflicting file is refused with one line and changes nothing") {
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  Running d(host.tmp / "d", {}, "it-rec", host.root);
  std::string node = host.node.string(), file = host.desired.string();
  host.want("containers:\n  - id: " + c.id() + "\n    devices: [\"" + node + ":/dev/kmsg-a\"]\n");
  REQUIRE(host.reconcile().exit_code == 0);
  REQUIRE(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
  std::string before = read_file(c.record());
  // Each file, were it taken, would drop /dev/kmsg-a and attach /dev/kmsg-b.
  std::string head = "containers:\n  - id: " + c.id() + "\n";
  std::string b = "    devices: [\"" + node + ":/dev/kmsg-b\"]\n";
  struct Bad {
    const char* what;
    std::string text;
    int line;           // the line the message names
    std::string names;  // and what else it says
  };
  const std::vector<Bad> bad = {
      {"YAML syntax error", head + "    devices: [\"" + node + ":/dev/kmsg-b\"\n", 4, "did not find expected"},
      {"unknown field", head + b + "    shard: true\n", 4, "shard"},
      {"bad device", head + "    devices: [\"" + node + ":/dev/kmsg-b:rwx\"]\n", 3, "rwx"},
      {"the same container twice", head + b + "  - id: " + c.id() + "\n" + b, 4, "already listed at line 2"},
      {"same host device in two entries, not shared", head + b + "  - id: " + d.id() + "\n" + b, 4, "shared: true"},
      {"same host device in two entries, only one shared", head + b + "    shared: true\n  - id: " + d.id() + "\n" + b,
       5, "shared: true"},
  };
  for (const auto& x : bad) {
    INFO(x.what);
    host.want(x.text);
    auto r = host.reconcile();
    one_line_error(r, file + ": line " + std::to_string(x.line) + ": ");
    CHECK_THAT(r.err, Contains(x.names));
    CHECK_THAT(r.err, StartsWith("specshim reconcile: "));
    CHECK_THAT(r.err, EndsWith("; nothing was changed\n"));
    CHECK(r.out.empty());
    CHECK(read_file(c.record()) == before);
    CHECK(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
    CHECK(gone(c, "/dev/kmsg-b"));
    CHECK(gone(d, "/dev/kmsg-b"));
    CHECK_FALSE(fs::exists(d.record()));
  }
}

TEST_CASE("reconcile: entries that both say shared: true get the same host device") {
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  Running d(host.tmp / "d", in_pod("container", "main"), "it-rec", host.root);
  std::string dev = "    devices: [\"" + host.node.string() + ":/dev/kmsg-s\"]\n    shared: true\n";
  host.want("containers:\n  - id: " + c.id() + "\n" + dev + "  - pod: " + kPod + "\n" + dev);
  auto r = host.reconcile();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  std::string key = "device " + host.node.string() + ":/dev/kmsg-s:rwm";
  CHECK(lines(r.out) == sorted({attached(by_id(c.id()), "/dev/kmsg-s", "rwm", key),
                                attached(by_pod(d.id()), "/dev/kmsg-s", "rwm", key)}));
  CHECK(c.exec(opens("/dev/kmsg-s")).out == "open-ok\n");
  CHECK(d.exec(opens("/dev/kmsg-s")).out == "open-ok\n");
}

TEST_CASE("reconcile: an entry naming no live container is reported and exit is 0, a missing file is exit 1") {
  Host host;
  Running c(host.tmp / "c", {}, "it-rec", host.root);
  std::string file = host.desired.string();
  host.want(
      "containers:\n  - id: " + c.id() + "\n    shared: true\n    devices: [\"" + host.node.string() +
      ":/dev/kmsg-a\"]\n  - pod: {namespace: dev, name: gone-1, container: main}\n    shared: true\n    devices: [\"" +
      host.other.string() + ":/dev/kmsg-a\"]\n  - id: no-such-container\n    gpus: [GPU-1]\n");
  auto r = host.reconcile();
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == attached(by_id(c.id()), "/dev/kmsg-a", "rwm", "device " + host.node.string() + ":/dev/kmsg-a:rwm"));
  CHECK(
      lines(r.err) ==
      sorted({"specshim reconcile: " + file +
                  ":5: pod `dev/gone-1` container `main`: no such container (created or running, not a pod sandbox)\n",
              "specshim reconcile: " + file +
                  ":8: container `no-such-container`: no such container (created or "
                  "running, not a pod sandbox)\n"}));
  REQUIRE(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
  std::string before = read_file(c.record());

  fs::remove(host.desired);
  r = host.reconcile();
  one_line_error(r, "`" + file + "`: no such file");
  CHECK_THAT(r.err, StartsWith("specshim reconcile: "));
  CHECK_THAT(r.err, EndsWith("; nothing was changed\n"));
  CHECK(r.out.empty());
  CHECK(read_file(c.record()) == before);
  CHECK(c.exec(opens("/dev/kmsg-a")).out == "open-ok\n");
}
