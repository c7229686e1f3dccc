// SPDX-License-Identifier: Apache-2.0
// specshim/nri/adjust.h: NRI's pod and container as an OCI spec (spec_view),
// the chain's change of that spec as a ContainerAdjustment, or a refusal
// naming the field NRI cannot pass on (adjustment), and which NRI a runtime
// speaks (level_of).
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/nri/adjust.h"

namespace api = ::nri::pkg::api::v1alpha1;
using Catch::Contains;
using specshim::Json;
using specshim::nri::adjustment;
using specshim::nri::Level;
using specshim::nri::level_of;
using specshim::nri::spec_view;
using specshim::test::error_of;

namespace {

void add_mount(api::Container& c, const std::string& dest, const std::string& type, const std::string& source,
               const std::vector<std::string>& options) {
  auto* m = c.add_mounts();
  m->set_destination(dest);
  m->set_type(type);
  m->set_source(source);
  for (const auto& o : options) m->add_options(o);
}

void add_rule(api::Container& c, bool allow, const std::string& type, std::optional<std::int64_t> major,
              std::optional<std::int64_t> minor, const std::string& access) {
  auto* r = c.mutable_linux()->mutable_resources()->add_devices();
  r->set_allow(allow);
  r->set_type(type);
  if (major) r->mutable_major()->set_value(*major);
  if (minor) r->mutable_minor()->set_value(*minor);
  r->set_access(access);
}

// plain is a container as containerd 2.1 shows it (no user, no rlimits, no
// hooks): args, env, two mounts, the default device rules (deny all, then
// /dev/null's), namespaces and a cgroups path.
api::Container plain() {
  api::Container c;
  c.set_id("c1");
  for (const char* a : {"/bin/sh", "-c", "sleep 1"}) c.add_args(a);
  for (const char* e : {"PATH=/usr/bin", "HOME=/root"}) c.add_env(e);
  (*c.mutable_annotations())["io.kubernetes.cri.container-name"] = "app";
  add_mount(c, "/proc", "proc", "proc", {"nosuid", "noexec", "nodev"});
  add_mount(c, "/etc/hosts", "", "/var/lib/pods/p1/etc-hosts", {"rbind", "rprivate", "rw"});
  auto* l = c.mutable_linux();
  for (const char* t : {"pid", "ipc", "uts", "mount"}) l->add_namespaces()->set_type(t);
  auto* net = l->add_namespaces();
  net->set_type("network");
  net->set_path("/var/run/netns/cni-1");
  add_rule(c, false, "", std::nullopt, std::nullopt, "rwm");
  add_rule(c, true, "c", 1, 3, "rwm");
  l->set_cgroups_path("kubepods-besteffort-pod1.slice:cri-containerd:c1");
  return c;
}

Json view(const api::Container& c) {
  return spec_view(api::PodSandbox(), c, {}).json();
}

// rich is plain with everything else NRI shows: a user and rlimits
// (containerd 2.3), hooks, a device, a cpuset.
api::Container rich() {
  api::Container c = plain();
  c.mutable_user()->set_uid(1000);
  c.mutable_user()->set_gid(1000);
  auto* r = c.add_rlimits();
  r->set_type("RLIMIT_NOFILE");
  r->set_hard(1048576);
  r->set_soft(1024);
  c.mutable_hooks()->add_prestart()->set_path("/usr/bin/prestart-hook");
  auto* d = c.mutable_linux()->add_devices();
  d->set_path("/dev/fuse");
  d->set_type("c");
  d->set_major(10);
  d->set_minor(229);
  add_rule(c, true, "c", 10, 229, "rwm");
  c.mutable_linux()->mutable_resources()->mutable_cpu()->set_cpus("0-3");
  return c;
}

// unordered is j with objects that compare whatever their keys' order.
nlohmann::json unordered(const Json& j) {
  return nlohmann::json::parse(j.dump());
}
nlohmann::json expected(const char* text) {
  return nlohmann::json::parse(text);
}

Level level(int minor) {
  Level l;
  l.runtime = "containerd (test)";
  l.nri_minor = minor;
  return l;
}

std::string refusal(const Json& before, const Json& after, int minor, std::string_view by = "cdi") {
  return error_of<specshim::Error>([&] { adjustment(before, after, level(minor), by); });
}

Json device(const std::string& path, const char* type, int major, int minor) {
  return {{"path", path}, {"type", type}, {"major", major}, {"minor", minor}};
}

Json& rules(Json& spec) {
  return spec["linux"]["resources"]["devices"];
}

// difference is what MessageDifferencer finds between adj and the one text
// (protobuf's text format) describes: "" when they are the same, map entries
// in any order, repeated fields in theirs.
std::string difference(const api::ContainerAdjustment& adj, const char* text) {
  api::ContainerAdjustment want;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &want));
  std::string report;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&report);
  differencer.Compare(want, adj);
  return report;
}

std::map<std::string, std::string> env_of(const api::ContainerAdjustment& adj) {
  std::map<std::string, std::string> out;
  for (const auto& kv : adj.env()) out[kv.key()] = kv.value();
  return out;
}

api::ConfigureRequest runtime(const std::string& name, const std::string& version, const std::string& nri = "") {
  api::ConfigureRequest req;
  req.set_runtime_name(name);
  req.set_runtime_version(version);
  req.set_nri_version(nri);
  return req;
}

}  // namespace

TEST_CASE("nri spec_view: args, env and mounts with their type and options, and no root") {
  Json j = view(plain());
  CHECK(j["process"]["args"] == Json::array({"/bin/sh", "-c", "sleep 1"}));
  CHECK(j["process"]["env"] == Json::array({"PATH=/usr/bin", "HOME=/root"}));
  CHECK(unordered(j["mounts"]) == expected(R"([
    {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/etc/hosts", "source": "/var/lib/pods/p1/etc-hosts", "options": ["rbind", "rprivate", "rw"]}])"));
  CHECK_FALSE(j.contains("root"));
  CHECK_FALSE(j.contains("hooks"));
}

TEST_CASE("nri spec_view: hooks of all six kinds under their OCI names") {
  api::Container c = plain();
  auto* h = c.mutable_hooks();
  auto* pre = h->add_prestart();
  pre->set_path("/hooks/prestart");
  for (const char* a : {"prestart", "--flag"}) pre->add_args(a);
  pre->add_env("A=1");
  pre->mutable_timeout()->set_value(5);
  h->add_create_runtime()->set_path("/hooks/create-runtime");
  h->add_create_container()->set_path("/hooks/create-container");
  h->add_start_container()->set_path("/hooks/start-container");
  h->add_poststart()->set_path("/hooks/poststart");
  h->add_poststop()->set_path("/hooks/poststop");
  h->add_poststop()->set_path("/hooks/poststop-2");
  CHECK(unordered(view(c)["hooks"]) == expected(R"({
    "prestart": [{"path": "/hooks/prestart", "args": ["prestart", "--flag"], "env": ["A=1"], "timeout": 5}],
    "createRuntime": [{"path": "/hooks/create-runtime"}],
    "createContainer": [{"path": "/hooks/create-container"}],
    "startContainer": [{"path": "/hooks/start-container"}],
    "poststart": [{"path": "/hooks/poststart"}],
    "poststop": [{"path": "/hooks/poststop"}, {"path": "/hooks/poststop-2"}]})"));
}

TEST_CASE("nri spec_view: devices with fileMode, uid and gid only when set, rules with absent numbers as wildcards") {
  api::Container c = plain();
  auto* gpu = c.mutable_linux()->add_devices();
  gpu->set_path("/dev/nvidia0");
  gpu->set_type("c");
  gpu->set_major(195);
  gpu->mutable_file_mode()->set_value(0666);
  gpu->mutable_uid()->set_value(0);  // set, though zero
  gpu->mutable_gid()->set_value(44);
  auto* fuse = c.mutable_linux()->add_devices();
  fuse->set_path("/dev/fuse");
  fuse->set_type("c");
  fuse->set_major(10);
  fuse->set_minor(229);
  add_rule(c, true, "c", 195, std::nullopt, "rw");
  add_rule(c, false, "b", 0, 0, "m");  // set to 0 is not a wildcard

  Json j = view(c);
  CHECK(unordered(j["linux"]["devices"]) == expected(R"([
    {"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0, "fileMode": 438, "uid": 0, "gid": 44},
    {"path": "/dev/fuse", "type": "c", "major": 10, "minor": 229}])"));
  CHECK(unordered(j["linux"]["resources"]["devices"]) == expected(R"([
    {"allow": false, "access": "rwm"},
    {"allow": true, "type": "c", "major": 1, "minor": 3, "access": "rwm"},
    {"allow": true, "type": "c", "major": 195, "access": "rw"},
    {"allow": false, "type": "b", "major": 0, "minor": 0, "access": "m"}])"));
}

TEST_CASE("nri spec_view: cpuset, cgroups path and namespaces") {
  api::Container c = plain();
  CHECK_FALSE(view(c)["linux"]["resources"].contains("cpu"));
  c.mutable_linux()->mutable_resources()->mutable_cpu()->set_cpus("0-3");
  c.mutable_linux()->mutable_resources()->mutable_cpu()->set_mems("1");
  Json j = view(c);
  CHECK(unordered(j["linux"]["resources"]["cpu"]) == expected(R"({"cpus": "0-3", "mems": "1"})"));
  CHECK(j["linux"]["cgroupsPath"] == "kubepods-besteffort-pod1.slice:cri-containerd:c1");
  CHECK(unordered(j["linux"]["namespaces"]) == expected(R"([{"type": "pid"}, {"type": "ipc"}, {"type": "uts"},
    {"type": "mount"}, {"type": "network", "path": "/var/run/netns/cni-1"}])"));
}

TEST_CASE("nri spec_view: process.user only when the container has one (containerd 2.3), and rlimits") {
  CHECK_FALSE(view(plain())["process"].contains("user"));
  CHECK_FALSE(view(plain())["process"].contains("rlimits"));

  api::Container c = rich();
  c.mutable_user()->add_additional_gids(10);
  c.mutable_user()->add_additional_gids(44);
  Json j = view(c);
  CHECK(unordered(j["process"]["user"]) == expected(R"({"uid": 1000, "gid": 1000, "additionalGids": [10, 44]})"));
  CHECK(unordered(j["process"]["rlimits"]) ==
        expected(R"([{"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 1024}])"));

  api::Container root = plain();
  root.mutable_user();  // uid 0, gid 0: present, not absent
  CHECK(unordered(view(root)["process"]["user"]) == expected(R"({"uid": 0, "gid": 0})"));
}

TEST_CASE("nri spec_view: annotations are the container's and the pod's that match a glob, the container's winning") {
  api::Container c = plain();
  (*c.mutable_annotations())["cdi.k8s.io/y"] = "container";
  api::PodSandbox pod;
  auto& pa = *pod.mutable_annotations();
  pa["cdi.k8s.io/x"] = "pod-x";
  pa["cdi.k8s.io/y"] = "pod-y";
  pa["cdi.k8s.io/sub/z"] = "deep";
  pa["specshim.io/gpu"] = "1";
  pa["io.kubernetes.pod.name"] = "p1";
  pa["top"] = "t";

  Json a = spec_view(pod, c, {"cdi.k8s.io/*", "specshim.io/gpu"}).json()["annotations"];
  CHECK(a["io.kubernetes.cri.container-name"] == "app");
  CHECK(a["cdi.k8s.io/x"] == "pod-x");
  CHECK(a["cdi.k8s.io/y"] == "container");
  CHECK(a["specshim.io/gpu"] == "1");
  CHECK_FALSE(a.contains("cdi.k8s.io/sub/z"));  // * stops at /
  CHECK_FALSE(a.contains("io.kubernetes.pod.name"));
  CHECK_FALSE(a.contains("top"));
  CHECK(a.size() == 4);

  Json star = spec_view(pod, c, {"*"}).json()["annotations"];
  CHECK(star["top"] == "t");
  CHECK_FALSE(star.contains("cdi.k8s.io/x"));
  CHECK(star["io.kubernetes.pod.name"] == "p1");

  CHECK(spec_view(pod, c, {}).json()["annotations"].size() == 2);
}

TEST_CASE("nri adjustment: no change is an empty adjustment") {
  for (int minor : {8, 10, 12}) {
    CAPTURE(minor);
    Json spec = view(rich());
    CHECK(adjustment(spec, spec, level(minor)).ByteSizeLong() == 0);
    Json before = view(plain());
    CHECK(adjustment(before, Json(before), level(minor)).ByteSizeLong() == 0);
  }
}

TEST_CASE("nri adjustment: env added, changed and removed, by the value the process sees") {
  Json before = view(plain());
  before["process"]["env"] = Json::array({"PATH=/usr/bin", "HOME=/root", "LANG=C", "DUP=1", "DUP=2"});
  Json after = before;
  // DUP keeps its last value; PATH's last entry is a new one.
  after["process"]["env"] = Json::array({"PATH=/usr/bin", "HOME=/home/app", "DUP=2", "NEW=x", "PATH=/opt/bin"});
  auto adj = adjustment(before, after, level(8));
  CHECK(env_of(adj) ==
        std::map<std::string, std::string>{{"HOME", "/home/app"}, {"NEW", "x"}, {"PATH", "/opt/bin"}, {"-LANG", ""}});
  CHECK(adj.env_size() == 4);
}

TEST_CASE("nri adjustment: annotations added, changed and removed") {
  Json before = view(plain());
  before["annotations"]["a"] = "1";
  before["annotations"]["c"] = "3";
  Json after = before;
  after["annotations"]["a"] = "one";
  after["annotations"].erase("c");
  after["annotations"]["d"] = "4";
  CHECK(difference(adjustment(before, after, level(8)), R"(annotations { key: "a" value: "one" }
    annotations { key: "d" value: "4" } annotations { key: "-c" value: "" })") == "");
}

TEST_CASE("nri adjustment: mounts added, changed (added again by destination) and removed") {
  Json before = view(plain());
  Json after = before;
  Json& mounts = after["mounts"];
  mounts.erase(0);  // /proc
  mounts[0]["source"] = "/var/lib/pods/p1/etc-hosts-2";
  mounts.push_back(Json::parse(R"({"destination": "/data", "type": "bind", "source": "/srv/data",
                                   "options": ["rbind", "ro"]})"));
  CHECK(difference(adjustment(before, after, level(8)), R"(
    mounts { destination: "/etc/hosts" source: "/var/lib/pods/p1/etc-hosts-2" options: ["rbind", "rprivate", "rw"] }
    mounts { destination: "/data" type: "bind" source: "/srv/data" options: ["rbind", "ro"] }
    mounts { destination: "-/proc" })") == "");
}

TEST_CASE("nri adjustment: hooks are appended per kind") {
  Json before = view(rich());
  Json after = before;
  after["hooks"]["prestart"].push_back(
      Json::parse(R"({"path": "/usr/bin/nvidia-hook", "args": ["nvidia-hook", "prestart"], "env": ["X=1"],
                      "timeout": 7})"));
  after["hooks"]["createContainer"] = Json::array({Json{{"path", "/usr/bin/ldconfig-hook"}}});
  // The new ones only.
  CHECK(difference(adjustment(before, after, level(8)), R"(hooks {
    prestart { path: "/usr/bin/nvidia-hook" args: ["nvidia-hook", "prestart"] env: "X=1" timeout { value: 7 } }
    create_container { path: "/usr/bin/ldconfig-hook" } })") == "");
}

TEST_CASE("nri adjustment: a removed or changed hook is refused") {
  Json before = view(rich());
  before["hooks"]["createRuntime"] = Json::array({Json{{"path", "/hooks/a"}}});
  Json after = before;
  SECTION("removed") {
    after["hooks"]["prestart"] = Json::array();
  }
  SECTION("changed") {
    after["hooks"]["prestart"][0]["args"] = Json::array({"x"});
  }
  SECTION("one put before it") {
    after["hooks"]["prestart"].insert(after["hooks"]["prestart"].begin(), Json{{"path", "/x"}});
  }
  std::string what = refusal(before, after, 12);
  CHECK_THAT(what, Contains("hooks.prestart"));
  CHECK_THAT(what, Contains("cannot remove or change"));

  Json other = before;
  other["hooks"]["createRuntime"][0]["path"] = "/hooks/b";
  CHECK_THAT(refusal(before, other, 12), Contains("hooks.createRuntime"));
}

TEST_CASE("nri adjustment: a device added with a rule allowing rw is a LinuxDevice") {
  Json before = view(plain());
  Json after = before;
  Json gpu = device("/dev/nvidia0", "c", 195, 0);
  gpu["fileMode"] = 0666;
  gpu["uid"] = 0;
  gpu["gid"] = 44;
  after["linux"]["devices"].push_back(gpu);
  rules(after).push_back(Json::parse(R"({"allow": true, "type": "c", "major": 195, "minor": 0, "access": "rw"})"));
  // v0.8: the device's own rule is the one NRI adds with it. 438 is 0666.
  CHECK(difference(adjustment(before, after, level(8)), R"(linux { devices {
    path: "/dev/nvidia0" type: "c" major: 195 minor: 0 file_mode { value: 438 } uid { value: 0 } gid { value: 44 } } })") ==
        "");

  Json bare = before;
  bare["linux"]["devices"].push_back(device("/dev/nvidia1", "c", 195, 1));
  rules(bare).push_back(Json::parse(R"({"allow": true, "type": "c", "major": 195, "minor": 1, "access": "rw"})"));
  CHECK(difference(adjustment(before, bare, level(8)),
                   R"(linux { devices { path: "/dev/nvidia1" type: "c" major: 195 minor: 1 } })") == "");
}

TEST_CASE("nri adjustment: a device added that the final rules do not allow rw on is refused with its path") {
  Json before = view(plain());
  Json after = before;
  SECTION("a char device with r only") {
    after["linux"]["devices"].push_back(device("/dev/x", "c", 240, 0));
    rules(after).push_back(Json::parse(R"({"allow": true, "type": "c", "major": 240, "minor": 0, "access": "r"})"));
  }
  SECTION("a char device with no rule") {
    after["linux"]["devices"].push_back(device("/dev/x", "c", 240, 0));
  }
  SECTION("a block device with rw, not the rwm NRI gives it") {
    after["linux"]["devices"].push_back(device("/dev/x", "b", 8, 0));
    rules(after).push_back(Json::parse(R"({"allow": true, "type": "b", "major": 8, "minor": 0, "access": "rw"})"));
  }
  SECTION("rw then a deny of w") {
    after["linux"]["devices"].push_back(device("/dev/x", "c", 240, 0));
    rules(after).push_back(Json::parse(R"({"allow": true, "type": "c", "major": 240, "minor": 0, "access": "rw"})"));
    rules(after).push_back(Json::parse(R"({"allow": false, "type": "c", "major": 240, "access": "w"})"));
  }
  for (int minor : {8, 12}) {
    CAPTURE(minor);
    std::string what = refusal(before, after, minor);
    CHECK_THAT(what, Contains("linux.devices (/dev/x)"));
  }
}

TEST_CASE("nri adjustment: a device whose only change is fileMode is not added again, a removed one is -path") {
  Json before = view(rich());  // /dev/fuse without a mode
  Json after = before;
  after["linux"]["devices"][0]["fileMode"] = 0666;
  after["linux"]["devices"][0]["gid"] = 0;
  auto adj = adjustment(before, after, level(12));
  CHECK(adj.linux().devices_size() == 0);
  CHECK(adj.ByteSizeLong() == 0);

  Json removed = before;
  removed["linux"]["devices"] = Json::array();
  CHECK(difference(adjustment(before, removed, level(8)), R"(linux { devices { path: "-/dev/fuse" } })") == "");
}

TEST_CASE("nri adjustment: added device rules at NRI v0.10 go in linux.resources.devices") {
  Json before = view(plain());
  Json after = before;
  rules(after).push_back(Json::parse(R"({"allow": true, "type": "c", "major": 195, "access": "rw"})"));
  rules(after).push_back(Json::parse(R"({"allow": false, "type": "b", "major": 8, "minor": 0, "access": "m"})"));
  rules(after).push_back(Json::parse(R"({"allow": false, "type": "c", "access": "m"})"));
  CHECK(difference(adjustment(before, after, level(10)), R"(linux { resources {
    devices { allow: true type: "c" major { value: 195 } access: "rw" }
    devices { allow: false type: "b" major { value: 8 } minor { value: 0 } access: "m" }
    devices { allow: false type: "c" access: "m" } } })") == "");
}

TEST_CASE("nri adjustment: before NRI v0.10 only an added device's own allow rule passes") {
  Json before = view(plain());
  Json after = before;
  after["linux"]["devices"].push_back(device("/dev/nvidia0", "c", 195, 0));
  // rwm on a char device: NRI's implicit rule gives it rw.
  rules(after).push_back(Json::parse(R"({"allow": true, "type": "c", "major": 195, "minor": 0, "access": "rwm"})"));
  CHECK(difference(adjustment(before, after, level(8)),
                   R"(linux { devices { path: "/dev/nvidia0" type: "c" major: 195 minor: 0 } })") == "");

  SECTION("a deny rule, even for its own numbers") {
    rules(after).push_back(Json::parse(R"({"allow": false, "type": "c", "major": 195, "minor": 0, "access": "m"})"));
  }
  SECTION("a rule for other numbers") {
    rules(after).push_back(Json::parse(R"({"allow": true, "type": "c", "major": 195, "minor": 1, "access": "rw"})"));
  }
  SECTION("a wildcard rule") {
    rules(after).push_back(Json::parse(R"({"allow": true, "type": "c", "major": 195, "access": "rw"})"));
  }
  std::string what = refusal(before, after, 8);
  CHECK_THAT(what, Contains("linux.resources.devices"));
  CHECK_THAT(what, Contains("195:"));
  CHECK(adjustment(before, after, level(10)).linux().resources().devices_size() == 2);
}

TEST_CASE("nri adjustment: a changed or removed device rule is refused") {
  Json before = view(plain());
  Json after = before;
  SECTION("removed") {
    rules(after).erase(1);
  }
  SECTION("changed") {
    rules(after)[1]["access"] = "rw";
  }
  SECTION("one put before it") {
    rules(after).insert(rules(after).begin() + 1, Json{{"allow", true}, {"access", "r"}});
  }
  for (int minor : {8, 10}) {
    CAPTURE(minor);
    CHECK_THAT(refusal(before, after, minor), Contains("linux.resources.devices"));
  }
}

TEST_CASE("nri adjustment: a cpuset set goes in linux.resources.cpu, a cleared one is refused") {
  Json before = view(rich());  // cpus 0-3
  Json after = before;
  after["linux"]["resources"]["cpu"]["cpus"] = "2-3";
  after["linux"]["resources"]["cpu"]["mems"] = "0";
  CHECK(difference(adjustment(before, after, level(8)), R"(linux { resources { cpu { cpus: "2-3" mems: "0" } } })") ==
        "");

  Json none = view(plain());
  Json set = none;
  set["linux"]["resources"]["cpu"] = {{"cpus", "1"}};
  CHECK(difference(adjustment(none, set, level(8)), R"(linux { resources { cpu { cpus: "1" } } })") == "");

  Json cleared = before;
  cleared["linux"]["resources"].erase("cpu");
  CHECK_THAT(refusal(before, cleared, 12), Contains("linux.resources.cpu.cpus"));
}

TEST_CASE("nri adjustment: an rlimit added is appended, a changed or removed one refused") {
  Json before = view(rich());
  Json after = before;
  after["process"]["rlimits"].push_back(Json{{"type", "RLIMIT_NPROC"}, {"hard", 4096}, {"soft", 2048}});
  CHECK(difference(adjustment(before, after, level(8)), R"(rlimits { type: "RLIMIT_NPROC" hard: 4096 soft: 2048 })") ==
        "");

  Json changed = before;
  changed["process"]["rlimits"][0]["soft"] = 4096;
  CHECK_THAT(refusal(before, changed, 12), Contains("process.rlimits (RLIMIT_NOFILE)"));
  Json removed = before;
  removed["process"].erase("rlimits");
  CHECK_THAT(refusal(before, removed, 12), Contains("process.rlimits (RLIMIT_NOFILE)"));
}

TEST_CASE("nri adjustment: changed args are refused before NRI v0.10 and passed from it") {
  Json before = view(plain());
  Json after = before;
  after["process"]["args"] = Json::array({"/usr/bin/wrapper", "/bin/sh", "-c", "sleep 1"});
  CHECK_THAT(refusal(before, after, 8), Contains("process.args"));
  CHECK(difference(adjustment(before, after, level(10)), R"(args: ["/usr/bin/wrapper", "/bin/sh", "-c", "sleep 1"])") ==
        "");
}

TEST_CASE("nri adjustment: a changed cgroups path is set") {
  Json before = view(plain());
  Json after = before;
  after["linux"]["cgroupsPath"] = "specshim.slice:cri-containerd:c1";
  CHECK(difference(adjustment(before, after, level(8)),
                   R"(linux { cgroups_path: "specshim.slice:cri-containerd:c1" })") == "");
}

TEST_CASE("nri adjustment: a change NRI has no field for is refused with the field and who made it") {
  Json before = view(rich());  // a process with user and rlimits, a linux with namespaces
  Json after = before;
  std::string field;
  SECTION("capabilities") {
    field = "process.capabilities";
    after["process"]["capabilities"] = {{"bounding", Json::array({"CAP_SYS_ADMIN"})}};
  }
  SECTION("user") {
    field = "process.user";
    after["process"]["user"]["uid"] = 0;
  }
  SECTION("seccomp") {
    field = "linux.seccomp";
    after["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"}};
  }
  SECTION("root") {
    field = "root";
    after["root"] = {{"path", "rootfs"}};
  }
  std::string what = refusal(before, after, 12, "cdi, patches");
  CHECK_THAT(what, Contains("changed " + field));
  CHECK_THAT(what, Contains("cdi, patches"));
}

// The fields NRI can change are taken out before the rest is compared, which
// can leave `process` empty on one side: the field is still named, not
// its parent.
TEST_CASE("nri adjustment: a field NRI has no adjustment for is named when the view had nothing beside it") {
  // containerd 2.1: no user, no rlimits, so the view's process has only
  // args and env, which NRI can change.
  Json before = view(plain());
  Json after = before;
  std::string field;
  SECTION("capabilities") {
    field = "process.capabilities";
    after["process"]["capabilities"] = {{"bounding", Json::array({"CAP_SYS_ADMIN"})}};
  }
  SECTION("user") {
    field = "process.user";
    after["process"]["user"] = {{"uid", 0}, {"gid", 0}};
  }
  CHECK_THAT(refusal(before, after, 8, "userns"), Contains("changed " + field + ","));
}

TEST_CASE("nri level_of: the runtime's release, or NRI_version when sent") {
  CHECK(level_of(runtime("containerd", "2.1.9")).nri_minor == 8);
  CHECK(level_of(runtime("containerd", "2.2.0")).nri_minor == 10);
  CHECK(level_of(runtime("containerd", "v2.2.3")).nri_minor == 11);
  CHECK(level_of(runtime("containerd", "2.3.1")).nri_minor == 12);
  CHECK(level_of(runtime("containerd", "1.7.29")).nri_minor == 8);
  CHECK(level_of(runtime("cri-o", "1.34.2")).nri_minor == 10);
  CHECK(level_of(runtime("containerd", "2.2.0", "v0.12.2")).nri_minor == 12);
  CHECK(level_of(runtime("podman", "5.4.0")).nri_minor == 8);
  CHECK(level_of(runtime("containerd", "2.1.9")).runtime == "containerd 2.1.9");
  CHECK_FALSE(level_of(runtime("containerd", "2.1.9")).device_rules());
  CHECK(level_of(runtime("containerd", "2.2.0")).device_rules());
}
