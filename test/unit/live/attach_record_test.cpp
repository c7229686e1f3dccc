// SPDX-License-Identifier: Apache-2.0
// What reconcile adds to attach's record (specshim/live/attach_record.h): reconcile's
// references, nodes the hotplug modifier put in the spec at create (node
// "create"), the rules and CDI names it gave (createRules, createCdi); the
// record synthesized from the grant file before anything was attached; the
// rules enforced without the create rules; and plan merging wants into it.
#include <catch2/catch.hpp>

#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/base/spec.h"
#include "specshim/live/attach.h"
#include "specshim/live/device_rules.h"
#include "specshim/node/hotplug.h"
#include "tempdir.h"

using namespace specshim::live::attach;
using Catch::Contains;
using specshim::DeviceRule;
using specshim::Error;
using specshim::Json;
using specshim::Spec;
using specshim::test::error_of;
using specshim::test::TempDir;
using specshim::test::write_file;
namespace hotplug = specshim::hotplug;

namespace {

RecordedDevice device(std::string path, std::string host, std::int64_t minor, std::string perms = "rw") {
  RecordedDevice d;
  d.path = std::move(path);
  d.host_path = std::move(host);
  d.type = 'c';
  d.major = 1;
  d.minor = minor;
  d.permissions = std::move(perms);
  d.file_mode = 0666;
  return d;
}

// A record after create gave one node and a CDI device, and reconcile then
// attached another node and took over a hand-attached one.
Record with_reconcile() {
  Record r;
  r.container = "c0ffee";
  RecordedDevice created = device("/dev/accel0", "/tmp/x/accel0", 11);
  created.node = "create";
  created.reconcile = {"device /tmp/x/accel0:/dev/accel0:rw"};
  r.devices.push_back(created);
  RecordedDevice both = device("/dev/nvidia250", "/dev/nvidia250", 250, "rwm");
  both.major = 195;
  both.node = "mknod";
  both.direct = true;
  both.reconcile = {"gpu GPU-aaaa", "device /dev/nvidia250:/dev/nvidia250:rwm"};
  r.devices.push_back(both);
  RecordedDevice hand = device("/dev/kmsg-test", "/dev/kmsg", 11, "r");
  hand.direct = true;
  r.devices.push_back(hand);
  r.mounts.push_back({"/opt/accel", "/opt/accel", {"ro", "bind"}, "made", true, {}, {"cdi example.com/accel=0"}});
  r.create_rules = {{true, 'c', 1, 11, "rw"}, {true, 'c', std::nullopt, std::nullopt, "m"}};
  r.create_cdi = {"example.com/accel=0", "other.org/nic=a"};
  r.reconciled = {"gpu GPU-aaaa", "device /dev/nvidia250:/dev/nvidia250:rwm", "cdi example.com/accel=0",
                  "cdi other.org/nic=a"};
  return r;
}

hotplug::CreateGrant grant(const std::string& container = "c0ffee") {
  hotplug::CreateGrant g;
  g.container = container;
  g.desired = "/etc/specshim/hotplug.yaml:2";
  g.devices.push_back(
      {"device /tmp/x/accel0:/dev/accel0:rw", "/dev/accel0", "/tmp/x/accel0", 'c', 1, 11, "rw", 0660, 0, 44});
  g.devices.push_back({"gpu GPU-aaaa", "/dev/nvidia3", "/dev/nvidia3", 'c', 195, 3, "rwm", 0666, 0, 0});
  g.rules = {{true, 'c', 1, 11, "rw"}, {true, 'c', 195, 3, "rwm"}};
  g.cdi = {"example.com/accel=0"};
  return g;
}

}  // namespace

TEST_CASE("reconcile record: round trip with reconcile keys, node create, createRules and createCdi") {
  Record r = with_reconcile();
  std::string text = record_json(r);
  CHECK(parse_record(text, "f") == r);
  CHECK(record_json(parse_record(text, "f")) == text);
  auto j = Json::parse(text);
  CHECK(j["devices"][0]["node"] == "create");
  CHECK(j["devices"][0]["reconcile"] == Json::array({"device /tmp/x/accel0:/dev/accel0:rw"}));
  CHECK(j["devices"][1]["reconcile"] == Json::array({"gpu GPU-aaaa", "device /dev/nvidia250:/dev/nvidia250:rwm"}));
  CHECK_FALSE(j["devices"][2].contains("reconcile"));  // omitted when empty
  CHECK(j["mounts"][0]["reconcile"] == Json::array({"cdi example.com/accel=0"}));
  CHECK(j["createRules"] == Json::parse(R"([{"allow": true, "type": "c", "major": 1, "minor": 11, "access": "rw"},
                                            {"allow": true, "type": "c", "major": null, "minor": null, "access": "m"}])"));
  CHECK(j["createCdi"] == Json::array({"example.com/accel=0", "other.org/nic=a"}));

  Record plain{"x", {device("/dev/a", "/dev/a", 1)}, {}, {}, {}, {}, {}, {}};
  auto p = Json::parse(record_json(plain));
  CHECK_FALSE(p.contains("createRules"));
  CHECK_FALSE(p.contains("createCdi"));
  CHECK_FALSE(p["devices"][0].contains("reconcile"));
}

TEST_CASE("reconcile record: a record written before reconcile existed still reads") {
  // As attach wrote it: no reconcile, no createRules, no createCdi.
  Record r = parse_record(R"({"version": 1, "container": "abc",
    "devices": [{"path": "/dev/kmsg-test", "hostPath": "/dev/kmsg", "type": "c", "major": 1, "minor": 11,
                 "permissions": "rw", "fileMode": 420, "uid": 0, "gid": 5, "node": "mknod", "direct": true,
                 "cdi": []}],
    "mounts": [{"path": "/opt/a", "hostPath": "/opt/a", "options": ["bind"], "target": "made", "mounted": true,
                "cdi": ["x.com/y=0"]}],
    "notApplied": [], "dirs": []})",
                          "f");
  REQUIRE(r.devices.size() == 1);
  CHECK(r.devices[0].reconcile.empty());
  CHECK(r.devices[0].held());
  REQUIRE(r.mounts.size() == 1);
  CHECK(r.mounts[0].reconcile.empty());
  CHECK(r.create_rules.empty());
  CHECK(r.create_cdi.empty());
}

TEST_CASE("reconcile record: a device or mount is held while any reference remains") {
  RecordedDevice d = device("/dev/a", "/dev/a", 1);
  CHECK_FALSE(d.held());
  d.reconcile = {"gpu GPU-1"};
  CHECK(d.held());
  d.reconcile.clear();
  d.cdi = {"x.com/y=0"};
  CHECK(d.held());
  RecordedMount m{"/a", "/a", {}, "made", true, {}, {"cdi x.com/y=0"}};
  CHECK(m.held());
  m.reconcile.clear();
  CHECK_FALSE(m.held());
}

TEST_CASE("reconcile record: bad new fields are refused naming the field") {
  auto j = Json::parse(record_json(with_reconcile()));
  auto refused = [](const Json& doc) { return error_of<Error>([&] { parse_record(doc.dump(), "f"); }); };
  Json k = j;
  k["devices"][0]["node"] = "created";
  CHECK(refused(k) == "record `f`: devices[0]: node `created` is unknown");
  k = j;
  k["devices"][1]["reconcile"] = "gpu GPU-aaaa";
  CHECK_THAT(refused(k), Contains("record `f`: devices[1]: `reconcile`: "));
  k = j;
  k["createRules"][1]["type"] = "x";
  CHECK(refused(k) == "record `f`: createRules[1]: type `x` is unknown");
  k = j;
  k["createRules"] = Json::object();
  CHECK(refused(k) == "record `f`: `createRules` is not an array");
  k = j;
  k["createCdi"] = "example.com/accel=0";
  CHECK_THAT(refused(k), Contains("record `f`: `createCdi`: "));
}

TEST_CASE("reconcile record: current_record is the record, else the grant's, else empty") {
  TempDir bundle;
  Record empty{"c0ffee", {}, {}, {}, {}, {}, {}, {}};
  CHECK(current_record(bundle.path(), "c0ffee") == empty);

  write_file(bundle / hotplug::kGrantFile, hotplug::grant_json(grant()));
  Record from_grant = current_record(bundle.path(), "c0ffee");
  CHECK(from_grant.container == "c0ffee");
  REQUIRE(from_grant.devices.size() == 2);
  RecordedDevice want0{"/dev/accel0",
                       "/tmp/x/accel0",
                       'c',
                       1,
                       11,
                       "rw",
                       0660,
                       0,
                       44,
                       "create",
                       false,
                       {},
                       {"device /tmp/x/accel0:/dev/accel0:rw"}};
  CHECK(from_grant.devices[0] == want0);
  CHECK(from_grant.devices[1].node == "create");
  CHECK(from_grant.devices[1].reconcile == std::vector<std::string>{"gpu GPU-aaaa"});
  CHECK(from_grant.devices[1].major == 195);
  CHECK_FALSE(from_grant.devices[1].direct);
  CHECK(from_grant.devices[1].held());
  CHECK(attached_by(from_grant.devices[1]) == "create (gpu GPU-aaaa)");
  CHECK(from_grant.mounts.empty());
  CHECK(from_grant.create_rules == std::vector<DeviceRule>{{true, 'c', 1, 11, "rw"}, {true, 'c', 195, 3, "rwm"}});
  CHECK(from_grant.create_cdi == std::vector<std::string>{"example.com/accel=0"});
  // Every want create gave is held: reconcile then finds nothing to do.
  CHECK(from_grant.reconciled ==
        std::vector<std::string>{"device /tmp/x/accel0:/dev/accel0:rw", "gpu GPU-aaaa", "cdi example.com/accel=0"});

  // Once attach, detach or reconcile wrote a record, it is the truth.
  Record written = with_reconcile();
  write_file(bundle / kRecordFile, record_json(written));
  CHECK(current_record(bundle.path(), "c0ffee") == written);
}

TEST_CASE("reconcile record: a container specshim-nri created has its grant in [nri] state-dir/<id>") {
  TempDir bundle, state;
  Record empty{"c0ffee", {}, {}, {}, {}, {}, {}, {}};
  write_file(state / "c0ffee" / hotplug::kGrantFile, hotplug::grant_json(grant()));
  // Without the state dir the bundle alone has no grant: the GPU create gave
  // would look unheld, and moving it would never take it back.
  CHECK(current_record(bundle.path(), "c0ffee") == empty);
  Record from_state = current_record(bundle.path(), "c0ffee", state.path());
  CHECK(from_state.reconciled ==
        std::vector<std::string>{"device /tmp/x/accel0:/dev/accel0:rw", "gpu GPU-aaaa", "cdi example.com/accel=0"});
  // The bundle's own grant wins; another container's in the state dir is an error.
  write_file(bundle / hotplug::kGrantFile, hotplug::grant_json(grant()));
  CHECK(current_record(bundle.path(), "c0ffee", "/nonexistent") == current_record(bundle.path(), "c0ffee"));
  write_file(state / "beef" / hotplug::kGrantFile, hotplug::grant_json(grant("c0ffee")));
  CHECK_THAT(error_of<Error>([&] { current_record(state / "none", "beef", state.path()); }),
             Contains("is for container `c0ffee`, not `beef`"));
  // A name that is no container id is never a path below the state dir.
  CHECK(current_record(state / "none", "../c0ffee", state.path()).devices.empty());
}

TEST_CASE("reconcile record: a grant naming one node at one path twice is one device with both keys") {
  TempDir bundle;
  hotplug::CreateGrant g = grant();
  g.devices.push_back(
      {"device /dev/nvidia3:/dev/nvidia3:rwm", "/dev/nvidia3", "/dev/nvidia3", 'c', 195, 3, "rwm", 0666, 0, 0});
  write_file(bundle / hotplug::kGrantFile, hotplug::grant_json(g));
  Record r = current_record(bundle.path(), "c0ffee");
  REQUIRE(r.devices.size() == 2);
  CHECK(r.devices[1].reconcile == std::vector<std::string>{"gpu GPU-aaaa", "device /dev/nvidia3:/dev/nvidia3:rwm"});
}

TEST_CASE("reconcile record: a grant or record of another container is an error") {
  TempDir bundle;
  write_file(bundle / hotplug::kGrantFile, hotplug::grant_json(grant("beef")));
  CHECK(error_of<Error>([&] { current_record(bundle.path(), "c0ffee"); }) ==
        "`" + (bundle / hotplug::kGrantFile).string() + "` is for container `beef`, not `c0ffee`");
  write_file(bundle / hotplug::kGrantFile, "{");
  CHECK_THAT(error_of<Error>([&] { current_record(bundle.path(), "c0ffee"); }),
             Contains("parse `" + (bundle / hotplug::kGrantFile).string() + "`"));
  Record other = with_reconcile();
  other.container = "beef";
  write_file(bundle / kRecordFile, record_json(other));
  CHECK_THAT(error_of<Error>([&] { current_record(bundle.path(), "c0ffee"); }),
             Contains("is for container `beef`, not `c0ffee`"));
}

TEST_CASE("reconcile record: enforced rules leave out one occurrence of each create rule, then allow each device") {
  namespace live = specshim::live;
  Spec spec = Spec::parse(R"({"ociVersion": "1.0.2", "linux": {"resources": {"devices": [
      {"allow": false, "access": "rwm"},
      {"allow": true, "type": "c", "major": 1, "minor": 11, "access": "rw"},
      {"allow": true, "type": "c", "major": 10, "minor": 200, "access": "rwm"},
      {"allow": true, "type": "c", "major": 1, "minor": 11, "access": "rw"},
      {"allow": true, "type": "c", "major": 195, "minor": 3, "access": "rwm"}]}}})");
  std::vector<DeviceRule> create = {{true, 'c', 1, 11, "rw"}, {true, 'c', 195, 3, "rwm"}};
  RecordedDevice kmsg = device("/dev/kmsg-test", "/dev/kmsg", 11, "r");
  RecordedDevice accel = device("/dev/accel0", "/tmp/x/accel0", 11, "rw");

  std::vector<DeviceRule> want = {
      {false, 'a', std::nullopt, std::nullopt, "rwm"}, {true, 'c', 1, 11, "rw"}, {true, 'c', 10, 200, "rwm"}};
  for (const auto& d : live::runc_default_rules()) want.push_back(d);
  CHECK(enforced_rules(spec, create, {}) == want);
  auto with_devices = want;
  with_devices.push_back({true, 'c', 1, 11, "r"});
  with_devices.push_back({true, 'c', 1, 11, "rw"});
  CHECK(enforced_rules(spec, create, {kmsg, accel}) == with_devices);

  // No create rules: the container's rules as runc applied them.
  CHECK(enforced_rules(spec, {}, {}) == live::container_rules(spec));
  // A create rule the spec no longer has (a later modifier took it out) removes nothing.
  CHECK(enforced_rules(spec, {{true, 'b', 8, 0, "rwm"}}, {}) == live::container_rules(spec));
  // Each create rule once: listed twice, both copies go.
  auto twice = enforced_rules(spec, {{true, 'c', 1, 11, "rw"}, {true, 'c', 1, 11, "rw"}}, {});
  CHECK(std::count(twice.begin(), twice.end(), DeviceRule{true, 'c', 1, 11, "rw"}) == 0);
}

// ---- plan ----

TEST_CASE("reconcile plan: a want at a hand-attached node's path joins it, references united") {
  Record rec{"c0ffee", {}, {}, {}, {}, {}, {}, {}};
  RecordedDevice hand = device("/dev/accel0", "/tmp/x/accel0", 11);
  hand.direct = true;
  hand.cdi = {"example.com/accel=0"};
  hand.reconcile = {"device /tmp/x/accel0:/dev/accel0:rw"};
  rec.devices.push_back(hand);

  Wanted w;
  RecordedDevice want = device("/dev/accel0", "/tmp/x/accel0", 11);
  want.node = "mknod";
  want.reconcile = {"device /tmp/x/accel0:/dev/accel0:rw", "gpu GPU-aaaa"};
  w.devices.push_back(want);
  RecordedDevice fresh = device("/dev/accel1", "/tmp/x/accel1", 12, "r");
  fresh.reconcile = {"device /tmp/x/accel1:/dev/accel1:r"};
  w.devices.push_back(fresh);

  Plan p = plan(rec, w);
  REQUIRE(p.record.devices.size() == 2);
  const RecordedDevice& joined = p.record.devices[0];
  CHECK(joined.direct);
  CHECK(joined.node == "mknod");
  CHECK(joined.cdi == std::vector<std::string>{"example.com/accel=0"});
  CHECK(joined.reconcile == std::vector<std::string>{"device /tmp/x/accel0:/dev/accel0:rw", "gpu GPU-aaaa"});
  CHECK(attached_by(joined) ==
        "--device /tmp/x/accel0, --cdi example.com/accel=0, reconcile (device /tmp/x/accel0:/dev/accel0:rw, gpu "
        "GPU-aaaa)");
  CHECK(p.new_devices == std::vector<std::size_t>{1});
  CHECK(p.record.devices[1] == fresh);

  // A reconcile want joining a node create gave stays "create".
  Record created{"c0ffee", {}, {}, {}, {}, {}, {}, {}};
  RecordedDevice c = device("/dev/accel0", "/tmp/x/accel0", 11);
  c.node = "create";
  c.reconcile = {"gpu GPU-aaaa"};
  created.devices.push_back(c);
  Wanted direct;
  RecordedDevice d = device("/dev/accel0", "/tmp/x/accel0", 11);
  d.direct = true;
  direct.devices.push_back(d);
  Plan p2 = plan(created, direct);
  CHECK(p2.new_devices.empty());
  CHECK(p2.record.devices[0].node == "create");
  CHECK(p2.record.devices[0].direct);
  CHECK(p2.record.devices[0].reconcile == std::vector<std::string>{"gpu GPU-aaaa"});
}

TEST_CASE("reconcile plan: another device at a taken path is an error naming who attached it") {
  auto taken_by = [](RecordedDevice there, RecordedDevice asked) {
    Record rec{"c0ffee", {std::move(there)}, {}, {}, {}, {}, {}, {}};
    Wanted w;
    w.devices.push_back(std::move(asked));
    return error_of<Error>([&] { plan(rec, w); });
  };
  RecordedDevice by_reconcile = device("/dev/accel0", "/tmp/x/accel0", 11);
  by_reconcile.reconcile = {"gpu GPU-aaaa"};
  RecordedDevice asked = device("/dev/accel0", "/tmp/x/other", 12);
  asked.direct = true;
  CHECK(taken_by(by_reconcile, asked) ==
        "container path `/dev/accel0` is taken by c 1:11 rw (attached by reconcile (gpu GPU-aaaa)); asked for c 1:12 "
        "rw");
  RecordedDevice by_create = by_reconcile;
  by_create.node = "create";
  by_create.reconcile = {"device /tmp/x/accel0:/dev/accel0:rw", "gpu GPU-aaaa"};
  CHECK_THAT(taken_by(by_create, asked),
             Contains("(attached by create (device /tmp/x/accel0:/dev/accel0:rw, gpu GPU-aaaa))"));
  // The same numbers with other permissions are another rule: refused too.
  RecordedDevice narrower = device("/dev/accel0", "/tmp/x/accel0", 11, "r");
  narrower.reconcile = {"device /tmp/x/accel0:/dev/accel0:r"};
  CHECK_THAT(taken_by(by_reconcile, narrower), Contains("is taken by c 1:11 rw (attached by reconcile (gpu GPU-aaaa)); "
                                                        "asked for c 1:11 r"));
}

TEST_CASE("reconcile plan: attached_by names every holder") {
  RecordedDevice d = device("/dev/a", "/dev/a", 1);
  CHECK(attached_by(d) == "");
  d.direct = true;
  CHECK(attached_by(d) == "--device /dev/a");
  d.cdi = {"x.com/y=0", "x.com/y=1"};
  CHECK(attached_by(d) == "--device /dev/a, --cdi x.com/y=0, --cdi x.com/y=1");
  d.direct = false;
  d.cdi.clear();
  d.reconcile = {"gpu GPU-1", "cdi x.com/y=0"};
  CHECK(attached_by(d) == "reconcile (gpu GPU-1, cdi x.com/y=0)");
  d.node = "create";
  CHECK(attached_by(d) == "create (gpu GPU-1, cdi x.com/y=0)");
  d.node = "existing";
  CHECK(attached_by(d) == "reconcile (gpu GPU-1, cdi x.com/y=0)");
}

TEST_CASE("reconcile plan: mounts join by path, another bind mount there is an error") {
  Record rec{"c0ffee", {}, {{"/opt/a", "/opt/a", {"bind"}, "made", true, {"x.com/y=0"}, {}}}, {}, {}, {}, {}, {}};
  Wanted w;
  w.mounts.push_back({"/opt/a", "/opt/a", {"bind"}, "made", true, {}, {"cdi x.com/y=0"}});
  Plan p = plan(rec, w);
  CHECK(p.new_mounts.empty());
  CHECK(p.record.mounts[0].cdi == std::vector<std::string>{"x.com/y=0"});
  CHECK(p.record.mounts[0].reconcile == std::vector<std::string>{"cdi x.com/y=0"});
  Wanted other;
  other.mounts.push_back({"/opt/a", "/srv/b", {"bind"}, "made", true, {}, {"cdi x.com/z=0"}});
  CHECK(error_of<Error>([&] { plan(rec, other); }) == "container path `/opt/a` is taken by a bind mount of `/opt/a`");
}
