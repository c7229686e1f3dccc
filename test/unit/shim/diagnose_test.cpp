// SPDX-License-Identifier: Apache-2.0
// specshim diagnose's pure pieces: systemd's DeviceAllow= decision, the
// --pod match, access and spec look-ups, merging devices found twice, the
// vendor table, the report's status and its two renderings. The layers on
// real runc containers: test/integration/diagnose_test.cpp.
#include "diagnose/diagnose.h"

#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "specshim/base/spec.h"

using namespace specshim;
using namespace specshim::shim;
using namespace specshim::shim::diagnose;
using Catch::Contains;

namespace {

constexpr const char* kProcDevices =
    "Character devices:\n  1 mem\n  4 /dev/vc/0\n  5 /dev/tty\n195 nvidia-frontend\n"
    "226 drm\n509 nvidia-uvm\n\nBlock devices:\n  7 loop\n  8 sd\n259 blkext\n";

bool allows(std::string_view device_allow, char type, std::int64_t major, std::int64_t minor, char access,
            std::string_view proc_devices = kProcDevices) {
  return systemd_allows(device_allow, proc_devices, type, major, minor, access);
}

Spec pod_spec(std::string_view type, std::string_view ns, std::string_view name, std::string_view container) {
  nlohmann::json a = {{"io.kubernetes.cri.container-type", type},
                      {"io.kubernetes.cri.sandbox-namespace", ns},
                      {"io.kubernetes.cri.sandbox-name", name},
                      {"io.kubernetes.cri.sandbox-id", "0123abcd"}};
  if (!container.empty()) a["io.kubernetes.cri.container-name"] = container;
  return Spec::parse(nlohmann::json{{"ociVersion", "1.0.2"}, {"annotations", a}}.dump());
}

bool matches(std::string_view pattern, const std::string& path) {
  return ::fnmatch(std::string(pattern).c_str(), path.c_str(), FNM_PATHNAME) == 0;  // as companions.cpp matches
}

const Vendor& vendor(std::string_view name) {
  for (const auto& v : vendors())
    if (v.name == name) return v;
  FAIL("no vendor row " << name);
  return vendors().front();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

Container container(std::string id, std::string ns = "", std::string name = "", std::string cname = "") {
  Container c;
  c.id = std::move(id);
  c.identity.pod = {std::move(ns), std::move(name)};
  c.identity.container = std::move(cname);
  return c;
}

}  // namespace

// ---- systemd_allows ----

TEST_CASE("diagnose: DeviceAllow= /dev/char/MAJ:MIN allows that device and only its letters") {
  const char* da = "/dev/char/195:0 rw";
  CHECK(allows(da, 'c', 195, 0, 'r'));
  CHECK(allows(da, 'c', 195, 0, 'w'));
  CHECK_FALSE(allows(da, 'c', 195, 0, 'm'));
  CHECK_FALSE(allows(da, 'c', 195, 1, 'r'));
  CHECK_FALSE(allows(da, 'c', 196, 0, 'r'));
  CHECK_FALSE(allows(da, 'b', 195, 0, 'r'));
  CHECK(allows("/dev/char/195:0 rwm", 'c', 195, 0, 'm'));
  CHECK(allows("/dev/char/195:0 r", 'c', 195, 0, 'r'));
  CHECK_FALSE(allows("/dev/char/195:0 r", 'c', 195, 0, 'w'));

  const char* block = "/dev/block/8:16 r";
  CHECK(allows(block, 'b', 8, 16, 'r'));
  CHECK_FALSE(allows(block, 'b', 8, 16, 'w'));
  CHECK_FALSE(allows(block, 'c', 8, 16, 'r'));
  CHECK_FALSE(allows(block, 'b', 8, 0, 'r'));
}

TEST_CASE("diagnose: nothing in DeviceAllow= allows nothing") {
  CHECK_FALSE(allows("", 'c', 1, 3, 'r'));
  CHECK_FALSE(allows("\n", 'c', 1, 3, 'r'));
  CHECK_FALSE(allows("DeviceAllow=", 'c', 1, 3, 'r'));
  CHECK_FALSE(allows("DeviceAllow=\n", 'c', 1, 3, 'r'));
}

TEST_CASE("diagnose: DeviceAllow= char-NAME takes the majors /proc/devices gives the name, per type") {
  const char* da = "char-nvidia-frontend rw";
  CHECK(allows(da, 'c', 195, 0, 'r'));
  CHECK(allows(da, 'c', 195, 7, 'r'));
  CHECK(allows(da, 'c', 195, 255, 'w'));
  CHECK_FALSE(allows(da, 'c', 195, 7, 'm'));
  CHECK_FALSE(allows(da, 'c', 509, 0, 'r'));  // nvidia-uvm is another name
  CHECK_FALSE(allows(da, 'b', 195, 7, 'r'));
  CHECK_FALSE(allows(da, 'c', 195, 7, 'r', ""));  // no /proc/devices text: the name means nothing
  // The whole name, not a prefix of it.
  CHECK_FALSE(allows("char-nvidia rw", 'c', 195, 0, 'r'));
  CHECK_FALSE(allows("char-nvidia-frontend-x rw", 'c', 195, 0, 'r'));

  // The names of the other section do not count.
  CHECK_FALSE(allows("char-sd r", 'c', 8, 0, 'r'));
  CHECK_FALSE(allows("block-mem r", 'b', 1, 3, 'r'));
}

TEST_CASE("diagnose: DeviceAllow= char-MAJOR and char-* (how systemd prints wildcard minors)") {
  CHECK(allows("char-195 rw", 'c', 195, 0, 'r'));
  CHECK(allows("char-195 rw", 'c', 195, 42, 'w'));
  CHECK_FALSE(allows("char-195 rw", 'c', 195, 42, 'm'));
  CHECK_FALSE(allows("char-195 rw", 'c', 19, 0, 'r'));
  CHECK_FALSE(allows("char-195 rw", 'b', 195, 0, 'r'));
  CHECK_FALSE(allows("char-1955 rw", 'c', 195, 0, 'r'));
  CHECK(allows("block-8 r", 'b', 8, 3, 'r'));

  CHECK(allows("char-* rwm", 'c', 10, 200, 'm'));
  CHECK(allows("char-* r", 'c', 1, 3, 'r'));
  CHECK_FALSE(allows("char-* r", 'c', 1, 3, 'w'));
  CHECK_FALSE(allows("char-* rwm", 'b', 8, 0, 'r'));
  CHECK(allows("block-* rwm", 'b', 8, 0, 'r'));
  CHECK_FALSE(allows("block-* rwm", 'c', 8, 0, 'r'));
}

TEST_CASE("diagnose: DeviceAllow= block-NAME") {
  const char* da = "block-sd r";
  CHECK(allows(da, 'b', 8, 0, 'r'));
  CHECK(allows(da, 'b', 8, 16, 'r'));
  CHECK_FALSE(allows(da, 'b', 8, 0, 'w'));
  CHECK_FALSE(allows(da, 'b', 8, 0, 'm'));
  CHECK_FALSE(allows(da, 'c', 8, 0, 'r'));
  CHECK_FALSE(allows(da, 'b', 7, 0, 'r'));
  CHECK(allows("block-loop rw", 'b', 7, 3, 'w'));
}

TEST_CASE("diagnose: DeviceAllow= with several entries on one line, on several lines, and with the key") {
  const char* one_line = "/dev/char/1:3 rwm /dev/char/195:0 rw char-nvidia-uvm rw block-sd r";
  const char* lines = "/dev/char/1:3 rwm\n/dev/char/195:0 rw\nchar-nvidia-uvm rw\nblock-sd r\n";
  const char* keyed =
      "DeviceAllow=/dev/char/1:3 rwm\nDeviceAllow=/dev/char/195:0 rw\nDeviceAllow=char-nvidia-uvm rw\n"
      "DeviceAllow=block-sd r\n";
  for (const char* da : {one_line, lines, keyed}) {
    CAPTURE(da);
    CHECK(allows(da, 'c', 1, 3, 'm'));
    CHECK(allows(da, 'c', 195, 0, 'w'));
    CHECK_FALSE(allows(da, 'c', 195, 0, 'm'));
    CHECK_FALSE(allows(da, 'c', 195, 1, 'r'));
    CHECK(allows(da, 'c', 509, 1, 'r'));
    CHECK_FALSE(allows(da, 'c', 509, 1, 'm'));
    CHECK(allows(da, 'b', 8, 0, 'r'));
    CHECK_FALSE(allows(da, 'b', 8, 0, 'w'));
    CHECK_FALSE(allows(da, 'c', 226, 0, 'r'));
  }
  // Entries that do not allow the access do not stop the ones after them from allowing it.
  CHECK(allows("/dev/char/195:0 r /dev/char/195:0 w", 'c', 195, 0, 'w'));
  CHECK(allows("DeviceAllow=/dev/char/195:0 r DeviceAllow=/dev/char/195:0 w", 'c', 195, 0, 'w'));
}

TEST_CASE("diagnose: DeviceAllow= with a node path takes the host node's type and numbers") {
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  REQUIRE(S_ISCHR(st.st_mode));
  REQUIRE(major(st.st_rdev) == 1);
  REQUIRE(minor(st.st_rdev) == 3);
  CHECK(allows("/dev/null rw", 'c', 1, 3, 'r'));
  CHECK(allows("/dev/null rw", 'c', 1, 3, 'w'));
  CHECK_FALSE(allows("/dev/null rw", 'c', 1, 3, 'm'));
  CHECK_FALSE(allows("/dev/null rw", 'c', 1, 5, 'r'));
  CHECK_FALSE(allows("/dev/null rw", 'b', 1, 3, 'r'));
  CHECK(allows("DeviceAllow=/dev/null rwm", 'c', 1, 3, 'm'));
  CHECK_FALSE(allows("/dev/specshim-no-such-node rwm", 'c', 1, 3, 'r'));
  CHECK_FALSE(allows("/dev rwm", 'c', 1, 3, 'r'));  // a directory is no device
}

// ---- pod_matches ----

TEST_CASE("diagnose: pod_matches compares namespace, name and (when given) the container name") {
  Spec s = pod_spec("container", "default", "web", "main");
  CHECK(pod_matches(s, "default", "web", ""));
  CHECK(pod_matches(s, "default", "web", "main"));
  CHECK_FALSE(pod_matches(s, "default", "web", "sidecar"));
  CHECK_FALSE(pod_matches(s, "kube-system", "web", ""));
  CHECK_FALSE(pod_matches(s, "default", "web-1", ""));
  CHECK_FALSE(pod_matches(s, "default", "we", ""));
  CHECK_FALSE(pod_matches(s, "web", "default", ""));
}

TEST_CASE("diagnose: pod_matches never takes the sandbox") {
  Spec sandbox = pod_spec("sandbox", "default", "web", "");
  CHECK_FALSE(pod_matches(sandbox, "default", "web", ""));
  Spec named = pod_spec("sandbox", "default", "web", "main");
  CHECK_FALSE(pod_matches(named, "default", "web", ""));
  CHECK_FALSE(pod_matches(named, "default", "web", "main"));
}

TEST_CASE("diagnose: pod_matches of a spec with no CRI annotations is false") {
  Spec plain = Spec::parse(R"({"ociVersion":"1.0.2"})");
  CHECK_FALSE(pod_matches(plain, "default", "web", ""));
  Spec other = Spec::parse(R"({"annotations":{"io.kubernetes.cri.sandbox-name":"web"}})");
  CHECK_FALSE(pod_matches(other, "default", "web", ""));
}

// ---- open_access, in_spec ----

TEST_CASE("diagnose: open_access is the part of cgroup permissions an open needs") {
  CHECK(open_access("") == "rw");
  CHECK(open_access("rwm") == "rw");
  CHECK(open_access("rw") == "rw");
  CHECK(open_access("r") == "r");
  CHECK(open_access("w") == "w");
  CHECK(open_access("rm") == "r");
  CHECK(open_access("mw") == "w");
  CHECK(open_access("m") == "");
}

TEST_CASE("diagnose: in_spec names linux.devices, a mount destination, or nothing") {
  Spec s = Spec::parse(R"({
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
               {"destination": "/dev/gpu1", "type": "bind", "source": "/dev/nvidia1", "options": ["bind"]}],
    "linux": {"devices": [{"path": "/dev/nvidia0", "type": "c", "major": 195, "minor": 0},
                          {"type": "c", "major": 1, "minor": 1}, "not an object"]}
  })");
  CHECK(in_spec(s, "/dev/nvidia0") == "linux.devices");
  CHECK(in_spec(s, "/dev/gpu1") == "a bind mount");
  CHECK(in_spec(s, "/dev/nvidia1") == "");  // a mount's source is not where the container sees it
  CHECK(in_spec(s, "/dev/nvidia2") == "");
  CHECK(in_spec(s, "/dev") == "");
  CHECK(in_spec(Spec::parse("{}"), "/dev/nvidia0") == "");
  CHECK(in_spec(Spec::parse(R"({"linux":{"devices":{}},"mounts":"x"})"), "/dev/nvidia0") == "");
  // Both: linux.devices is named first.
  Spec both =
      Spec::parse(R"({"mounts":[{"destination":"/dev/x","source":"/dev/y"}],"linux":{"devices":[{"path":"/dev/x"}]}})");
  CHECK(in_spec(both, "/dev/x") == "linux.devices");
}

// ---- add_device, numbers ----

TEST_CASE("diagnose: add_device appends devices at new paths") {
  std::vector<Device> list;
  add_device(list, Device{"/dev/nvidia0", 'c', 195, 0, true, "/dev/nvidia0", "rw", "linux.devices", false});
  add_device(list, Device{"/dev/nvidia1", 'c', 195, 1, true, "/dev/nvidia1", "rw", "linux.devices", false});
  REQUIRE(list.size() == 2);
  CHECK(list[0].path == "/dev/nvidia0");
  CHECK(list[1].path == "/dev/nvidia1");
  CHECK(list[1].source == "linux.devices");
}

TEST_CASE("diagnose: add_device completes the device at the same path, and lists each source once") {
  std::vector<Device> list;
  // Known by path only (e.g. --device, or a granted node that is gone).
  add_device(list, Device{"/dev/gpu", 'c', 0, 0, false, "", "rw", "kubelet `vendor.com/gpu`", false});
  add_device(list, Device{"/dev/gpu", 'c', 195, 3, true, "/dev/nvidia3", "rw", "CDI `vendor.com/gpu=3`", true});
  REQUIRE(list.size() == 1);
  const Device& d = list[0];
  CHECK(d.host_path == "/dev/nvidia3");
  CHECK(d.numbers_known);
  CHECK(d.type == 'c');
  CHECK(d.major == 195);
  CHECK(d.minor == 3);
  CHECK(d.bind);
  CHECK(d.source == "kubelet `vendor.com/gpu`, CDI `vendor.com/gpu=3`");

  // The same source again is not listed twice; what is known already stays.
  add_device(list, Device{"/dev/gpu", 'b', 8, 0, true, "/dev/sda", "r", "CDI `vendor.com/gpu=3`", false});
  REQUIRE(list.size() == 1);
  CHECK(list[0].source == "kubelet `vendor.com/gpu`, CDI `vendor.com/gpu=3`");
  CHECK(list[0].host_path == "/dev/nvidia3");
  CHECK(list[0].type == 'c');
  CHECK(list[0].major == 195);
  CHECK(list[0].minor == 3);
  CHECK(list[0].bind);

  add_device(list, Device{"/dev/gpu", 'c', 195, 3, true, "/dev/nvidia3", "rw", "linux.devices", false});
  CHECK(list[0].source == "kubelet `vendor.com/gpu`, CDI `vendor.com/gpu=3`, linux.devices");
  CHECK(list.size() == 1);
}

TEST_CASE("diagnose: numbers writes type and numbers, ? when they are not known") {
  CHECK(numbers(Device{"/dev/nvidia0", 'c', 195, 0, true, "", "rw", "", false}) == "c 195:0");
  CHECK(numbers(Device{"/dev/sda", 'b', 8, 0, true, "", "rw", "", false}) == "b 8:0");
  CHECK(numbers(Device{"/dev/x", 'c', 1, 2, false, "", "rw", "", false}) == "?");
}

// ---- vendors ----

TEST_CASE("diagnose: every vendor row has an absolute node pattern fnmatch takes, and absolute companions") {
  REQUIRE_FALSE(vendors().empty());
  for (const auto& v : vendors()) {
    CAPTURE(v.name);
    CHECK_FALSE(v.name.empty());
    REQUIRE_FALSE(v.node.empty());
    CHECK(v.node.front() == '/');
    // fnmatch returns FNM_NOMATCH for a path it does not match, anything else nonzero for a bad pattern.
    int rc = ::fnmatch(std::string(v.node).c_str(), "/dev/specshim-probe", FNM_PATHNAME);
    CHECK((rc == 0 || rc == FNM_NOMATCH));
    for (auto companion : v.nodes) {
      CAPTURE(companion);
      REQUIRE_FALSE(companion.empty());
      CHECK(companion.front() == '/');
      rc = ::fnmatch(std::string(companion).c_str(), "/dev/specshim-probe", FNM_PATHNAME);
      CHECK((rc == 0 || rc == FNM_NOMATCH));
      // A companion named exactly is not a device of the row itself.
      if (companion.find_first_of("*?[") == std::string_view::npos)
        CHECK_FALSE(matches(v.node, std::string(companion)));
    }
    for (auto lib : v.libraries) CHECK(lib.find('/') == std::string_view::npos);  // sonames, not paths
  }
}

TEST_CASE("diagnose: the NVIDIA row takes GPU nodes only") {
  const Vendor& v = vendor("NVIDIA GPU");
  CHECK(matches(v.node, "/dev/nvidia0"));
  CHECK(matches(v.node, "/dev/nvidia7"));
  CHECK(matches(v.node, "/dev/nvidia12"));
  CHECK_FALSE(matches(v.node, "/dev/nvidiactl"));
  CHECK_FALSE(matches(v.node, "/dev/nvidia-uvm"));
  CHECK_FALSE(matches(v.node, "/dev/nvidia-uvm-tools"));
  CHECK_FALSE(matches(v.node, "/dev/nvidia-modeset"));
  CHECK_FALSE(matches(v.node, "/dev/nvidia-caps/nvidia-cap1"));
  CHECK_FALSE(matches(v.node, "/dev/nvidia"));
  CHECK_FALSE(matches(v.node, "/dev/nvidia0/x"));
  CHECK_FALSE(matches(v.node, "/host/dev/nvidia0"));
  CHECK_FALSE(v.iommu_group);
  CHECK_FALSE(v.locked_memory);
}

TEST_CASE("diagnose: the VFIO row takes group nodes, not the container node") {
  const Vendor& v = vendor("VFIO group");
  CHECK(matches(v.node, "/dev/vfio/7"));
  CHECK(matches(v.node, "/dev/vfio/0"));
  CHECK(matches(v.node, "/dev/vfio/42"));
  CHECK_FALSE(matches(v.node, "/dev/vfio/vfio"));
  CHECK_FALSE(matches(v.node, "/dev/vfio"));
  CHECK_FALSE(matches(v.node, "/dev/vfio/devices/vfio0"));  // iommufd's cdev
  CHECK(v.iommu_group);
  CHECK(v.locked_memory);
  CHECK(std::find(v.nodes.begin(), v.nodes.end(), "/dev/vfio/vfio") != v.nodes.end());
}

TEST_CASE("diagnose: a device matches at most one vendor row") {
  for (const char* path : {"/dev/nvidia0", "/dev/vfio/7", "/dev/kfd", "/dev/davinci0", "/dev/nvidiactl",
                           "/dev/dri/renderD128", "/dev/davinci_manager"}) {
    CAPTURE(path);
    int rows = 0;
    for (const auto& v : vendors()) rows += matches(v.node, path);
    CHECK(rows <= 1);
  }
}

// ---- Report ----

TEST_CASE("diagnose: a report's status is its worst finding's, info alone counting as ok") {
  Report r;
  CHECK(r.status() == Severity::ok);
  CHECK_FALSE(r.failed());
  r.add(kSpec, "devices", Severity::info, "0 device node(s)");
  r.add(kIdentity, "uid 0", Severity::info, "root");
  CHECK(r.status() == Severity::ok);
  r.add(kNode, "/dev/nvidia0", Severity::ok, "fine");
  CHECK(r.status() == Severity::ok);
  r.add(kCgroup, "/dev/nvidia0", Severity::warn, "2 programs", "bpftool");
  CHECK(r.status() == Severity::warn);
  CHECK_FALSE(r.failed());
  r.add(kCompanions, "/dev/nvidiactl", Severity::fail, "missing", "add it");
  CHECK(r.status() == Severity::fail);
  CHECK(r.failed());
  r.add(kHotplug, "record", Severity::ok, "fine");
  r.add(kHotplug, "record", Severity::warn, "hmm");
  CHECK(r.status() == Severity::fail);  // a later lesser finding does not lower it

  Report only_fail;
  only_fail.add(kNode, "/dev/x", Severity::fail, "missing");
  CHECK(only_fail.status() == Severity::fail);
  REQUIRE(only_fail.findings().size() == 1);
  CHECK(only_fail.findings()[0].layer == "node");
  CHECK(only_fail.findings()[0].subject == "/dev/x");
  CHECK(only_fail.findings()[0].hint.empty());
}

// ---- to_json ----

TEST_CASE("diagnose: to_json has container, pod, status and checks, in that order") {
  Container c = container("abc123", "default", "web", "main");
  Report r;
  r.add(kNode, "/dev/nvidia0", Severity::ok, "c 195:0 crw-rw-rw- 0:0, opens for rw");
  r.add(kCgroup, "/dev/nvidia0", Severity::fail, "denies c 195:0 w", "add a rule");
  std::string text = to_json(c, r).dump(2) + "\n";
  CHECK(text.back() == '\n');
  auto j = nlohmann::ordered_json::parse(text);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  CHECK(keys == std::vector<std::string>{"container", "pod", "status", "checks"});
  CHECK(j["container"] == "abc123");
  CHECK(j["pod"] == nlohmann::ordered_json{{"namespace", "default"}, {"name", "web"}, {"container", "main"}});
  CHECK(j["status"] == "fail");
  REQUIRE(j["checks"].size() == 2);
  std::vector<std::string> check_keys;
  for (auto it = j["checks"][0].begin(); it != j["checks"][0].end(); ++it) check_keys.push_back(it.key());
  CHECK(check_keys == std::vector<std::string>{"layer", "subject", "status", "message", "hint"});
  CHECK(j["checks"][0] == nlohmann::ordered_json{{"layer", "node"},
                                                 {"subject", "/dev/nvidia0"},
                                                 {"status", "ok"},
                                                 {"message", "c 195:0 crw-rw-rw- 0:0, opens for rw"},
                                                 {"hint", ""}});
  CHECK(j["checks"][1]["layer"] == "cgroup");
  CHECK(j["checks"][1]["status"] == "fail");
  CHECK(j["checks"][1]["hint"] == "add a rule");
}

TEST_CASE("diagnose: to_json's pod is null outside a pod, and checks an empty array with no findings") {
  Container c = container("plain");
  Report r;
  auto j = nlohmann::json::parse(to_json(c, r).dump());
  CHECK(j["container"] == "plain");
  REQUIRE(j.contains("pod"));
  CHECK(j["pod"].is_null());
  CHECK(j["status"] == "ok");
  REQUIRE(j["checks"].is_array());
  CHECK(j["checks"].empty());

  r.add(kSpec, "devices", Severity::info, "none");
  j = nlohmann::json::parse(to_json(c, r).dump());
  CHECK(j["status"] == "ok");
  CHECK(j["checks"][0]["status"] == "info");
}

// ---- render_text ----

TEST_CASE("diagnose: render_text prints hints only under warn and fail findings, then the counts") {
  Container c = container("abc123", "default", "web", "main");
  Report r;
  r.add(kSpec, "devices", Severity::info, "1 device node(s)", "an info hint is not printed");
  r.add(kNode, "/dev/nvidia0", Severity::ok, "opens for rw", "an ok hint is not printed");
  r.add(kCgroup, "/dev/nvidia0", Severity::fail, "denies c 195:0 w", "add a rule");
  r.add(kCompanions, "RLIMIT_MEMLOCK", Severity::warn, "64 KiB", "raise it");
  r.add(kCompanions, "/dev/nvidiactl", Severity::warn, "no hint here");
  std::string text = render_text(c, r);
  INFO(text);
  CHECK_THAT(text, !Contains("is not printed"));
  auto lines = lines_of(text);
  REQUIRE(lines.size() == 11);
  CHECK(lines[0] == "container abc123 (pod default/web, container main)");
  CHECK(lines[1] == "");
  CHECK(lines[2].rfind("spec", 0) == 0);
  CHECK_THAT(lines[2], Contains("info") && Contains("devices") && Contains("1 device node(s)"));
  CHECK(lines[3].rfind("node", 0) == 0);
  CHECK_THAT(lines[3], Contains("ok") && Contains("/dev/nvidia0") && Contains("opens for rw"));
  CHECK(lines[4].rfind("cgroup", 0) == 0);
  CHECK_THAT(lines[4], Contains("FAIL") && Contains("denies c 195:0 w"));
  CHECK_THAT(lines[5], Catch::EndsWith("hint: add a rule"));
  CHECK(lines[5].rfind(" ", 0) == 0);
  CHECK_THAT(lines[6], Contains("WARN") && Contains("RLIMIT_MEMLOCK") && Contains("64 KiB"));
  CHECK_THAT(lines[7], Catch::EndsWith("hint: raise it"));
  CHECK_THAT(lines[8], Contains("WARN") && Contains("/dev/nvidiactl") && Contains("no hint here"));
  CHECK(lines[9] == "");
  CHECK(lines[10] == "1 failed, 2 warnings");
  CHECK(text.back() == '\n');

  // Messages and hints start in one column.
  std::size_t column = lines[2].find("1 device node(s)");
  CHECK(lines[3].find("opens for rw") == column);
  CHECK(lines[4].find("denies") == column);
  CHECK(lines[5].find("hint:") == column);
  CHECK(lines[6].find("64 KiB") == column);
  CHECK(lines[7].find("hint:") == column);
  CHECK(lines[8].find("no hint here") == column);
}

TEST_CASE("diagnose: render_text outside a pod, with nothing wrong") {
  Container c = container("plain");
  Report r;
  r.add(kNode, "devices", Severity::info, "the container has no device beyond runc's own");
  auto lines = lines_of(render_text(c, r));
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "container plain");
  CHECK(lines.back() == "0 failed, 0 warnings");

  Report one;
  one.add(kNode, "/dev/x", Severity::warn, "w", "h");
  CHECK(lines_of(render_text(c, one)).back() == "0 failed, 1 warning");
  Report none;
  CHECK(render_text(c, none) == "container plain\n\n\n0 failed, 0 warnings\n");

  // A pod without a container name (specshim.io/pod outside CRI).
  CHECK(lines_of(render_text(container("x", "ns", "name"), none))[0] == "container x (pod ns/name)");
}
