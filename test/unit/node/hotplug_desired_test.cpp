// SPDX-License-Identifier: Apache-2.0
// The desired-state file of declarative hot-plug (specshim/node/hotplug.h): its
// YAML and JSON forms, what an entry wants and its keys, who it selects, the
// sharing rule, every refusal with the file and the line; and [hotplug] config.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/node/cdi.h"
#include "specshim/node/hotplug.h"

using namespace specshim;
using namespace specshim::hotplug;
using Catch::Contains;
using Catch::StartsWith;
using test::described_error;
using test::error_of;

namespace {

const std::string kFile = "/etc/specshim/hotplug.yaml";

Desired parse(const std::string& text) {
  return parse_desired(text, kFile);
}

// failure is the whole message parse_desired throws for text, as
// `specshim reconcile` and the modifier's warning print it.
std::string failure(const std::string& text) {
  return described_error([&] { parse(text); });
}

pod_identity::Identity cri(const std::string& ns, const std::string& name, const std::string& container) {
  pod_identity::Identity id;
  id.cri = true;
  id.pod = {ns, name};
  id.container = container;
  return id;
}

void check_same_entries(const Desired& a, const Desired& b) {
  REQUIRE(a.entries.size() == b.entries.size());
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    INFO("entry " << i);
    const Entry& x = a.entries[i];
    const Entry& y = b.entries[i];
    CHECK(x.line == y.line);
    CHECK(x.pod == y.pod);
    CHECK(x.id == y.id);
    CHECK(x.devices == y.devices);
    CHECK(x.cdi == y.cdi);
    CHECK(x.gpus == y.gpus);
    CHECK(x.shared == y.shared);
  }
}

// The same two entries, line for line, in YAML and in JSON.
const std::string kYaml = R"(# dev boxes
containers:
  - pod: {namespace: dev, name: box-7, container: main}
    devices: ["/dev/nvidia3", "/dev/kmsg:/dev/console-log:r", "/dev/fuse::mw", "/dev/dri/card0:/dev/card:wmr"]
    cdi: ["nvidia.com/gpu=1"]
    gpus: ["GPU-8f3c5d2e-1111-2222-3333-444455556666"]
    shared: true
  - id: 0123abcd
    devices:
      - /dev/net/tun
)";

const std::string kJson = R"({
"containers": [
  {"pod": {"namespace": "dev", "name": "box-7", "container": "main"},
    "devices": ["/dev/nvidia3", "/dev/kmsg:/dev/console-log:r", "/dev/fuse::mw", "/dev/dri/card0:/dev/card:wmr"],
    "cdi": ["nvidia.com/gpu=1"],
    "gpus": ["GPU-8f3c5d2e-1111-2222-3333-444455556666"],
    "shared": true},
  {"id": "0123abcd",
    "devices": [
      "/dev/net/tun"]}
]}
)";

}  // namespace

TEST_CASE("hotplug file: pod and id entries, devices read as attach --device reads them") {
  Desired d = parse(kYaml);
  CHECK(d.file == kFile);
  REQUIRE(d.entries.size() == 2);
  const Entry& box = d.entries[0];
  CHECK(box.line == 3);
  REQUIRE(box.pod);
  CHECK(*box.pod == PodSelector{"dev", "box-7", "main"});
  CHECK(box.id.empty());
  CHECK(box.devices == std::vector<DeviceArg>{{"/dev/nvidia3", "/dev/nvidia3", "rwm"},
                                              {"/dev/kmsg", "/dev/console-log", "r"},
                                              {"/dev/fuse", "/dev/fuse", "wm"},
                                              {"/dev/dri/card0", "/dev/card", "rwm"}});
  CHECK(box.cdi == std::vector<std::string>{"nvidia.com/gpu=1"});
  CHECK(box.gpus == std::vector<std::string>{"GPU-8f3c5d2e-1111-2222-3333-444455556666"});
  CHECK(box.shared);
  CHECK(d.where(box) == kFile + ":3");

  const Entry& byid = d.entries[1];
  CHECK(byid.line == 8);
  CHECK_FALSE(byid.pod);
  CHECK(byid.id == "0123abcd");
  CHECK(byid.devices == std::vector<DeviceArg>{{"/dev/net/tun", "/dev/net/tun", "rwm"}});
  CHECK(byid.cdi.empty());
  CHECK(byid.gpus.empty());
  CHECK_FALSE(byid.shared);
}

TEST_CASE("hotplug file: the same file in JSON reads the same, lines included") {
  Desired y = parse(kYaml);
  Desired j = parse_desired(kJson, "/etc/specshim/hotplug.json");
  CHECK(j.file == "/etc/specshim/hotplug.json");
  check_same_entries(y, j);
}

TEST_CASE("hotplug file: an empty list and a null list want nothing, an empty file is refused") {
  CHECK(parse("containers: []\n").entries.empty());
  CHECK(parse("containers:\n").entries.empty());
  // A writer that truncates before it writes must not read as "want nothing".
  for (const char* empty : {"", "\n", "{}"}) {
    INFO(empty);
    CHECK(failure(empty) == kFile + ": line 1: no `containers:` (write `containers: []` to want nothing)");
  }
  // An entry that wants nothing is still an entry: it selects its container.
  CHECK(parse("containers:\n  - id: a\n").entries.size() == 1);
}

TEST_CASE("hotplug file: keys name each want in file order, who names the container") {
  Desired d = parse(kYaml);
  CHECK(d.entries[0].keys() ==
        std::vector<std::string>{"device /dev/nvidia3:/dev/nvidia3:rwm", "device /dev/kmsg:/dev/console-log:r",
                                 "device /dev/fuse:/dev/fuse:wm", "device /dev/dri/card0:/dev/card:rwm",
                                 "gpu GPU-8f3c5d2e-1111-2222-3333-444455556666", "cdi nvidia.com/gpu=1"});
  CHECK(d.entries[1].keys() == std::vector<std::string>{"device /dev/net/tun:/dev/net/tun:rwm"});
  CHECK(d.entries[0].who() == "pod `dev/box-7` container `main`");
  CHECK(d.entries[1].who() == "container `0123abcd`");
  // The same want written differently has one key: defaults filled, permissions in rwm order.
  Desired again =
      parse("containers:\n  - id: a\n    devices: [\"/dev/kmsg:/dev/console-log:r\", \"/dev/x:/dev/x:mrw\"]\n");
  CHECK(again.entries[0].keys() ==
        std::vector<std::string>{"device /dev/kmsg:/dev/console-log:r", "device /dev/x:/dev/x:rwm"});
}

TEST_CASE("hotplug file: a want's key reads back as the same want, other text as none") {
  Desired d = parse(kYaml);
  for (const auto& w : d.entries[0].wants()) {
    INFO(w.key());
    CHECK(hotplug::Want::parse(w.key()) == w);
  }
  CHECK(d.entries[0].wants().back() == hotplug::Want{hotplug::Want::Kind::cdi, "nvidia.com/gpu=1"});
  CHECK(d.entries[0].wants()[4].kind == hotplug::Want::Kind::gpu);
  for (const char* other : {"", "gpu", "cdi:x", "Device /dev/x", "tpu 3"}) {
    INFO(other);
    CHECK_FALSE(hotplug::Want::parse(other));
  }
}

TEST_CASE("hotplug file: refusals name the file, the line and the field") {
  struct Row {
    std::string text;
    std::string want;  // the whole message after "FILE: "
  };
  std::vector<Row> rows = {
      {"containers: []\nextra: 1\n", "line 2: unknown field \"extra\""},
      {"containers:\n  - id: a\n    device: [/dev/x]\n", "line 3: containers[0]: unknown field \"device\""},
      {"containers:\n  - id: a\n    pod: {namespace: ns, name: p, container: c}\n",
       "line 2: containers[0]: give one of `pod`, `id` and `docker`"},
      {"containers:\n  - docker: {name: a}\n    id: b\n",
       "line 2: containers[0]: give one of `pod`, `id` and `docker`"},
      {"containers:\n  - devices: [/dev/x]\n",
       "line 2: containers[0]: missing `pod`, `id` or `docker`: which container is this for?"},
      {"containers:\n  - docker: {}\n", "line 2: containers[0].docker: missing `name`"},
      {"containers:\n  - docker: gpu-a\n", "line 2: containers[0].docker: want {name}"},
      {"containers:\n  - docker: {name: /gpu-a}\n",
       "line 2: containers[0].docker.name: `/gpu-a` is not a name dockerd gives ([a-zA-Z0-9][a-zA-Z0-9_.-]*)"},
      {"containers:\n  - docker: {name: a, label: x}\n", "line 2: containers[0].docker: unknown field \"label\""},
      {"containers:\n  - docker: {name: a}\n  - docker: {name: a}\n",
       "line 3: docker container `a` is already listed at line 2"},
      {"containers:\n  - id: a\n  - pod: {namespace: ns, name: p}\n", "line 3: containers[1].pod: missing `container`"},
      {"containers:\n  - pod: {name: p, container: c}\n", "line 2: containers[0].pod: missing `namespace`"},
      {"containers:\n  - pod: {namespace: ns, name: p, container: c, uid: u}\n",
       "line 2: containers[0].pod: unknown field \"uid\""},
      {"containers:\n  - pod: dev/box\n", "line 2: containers[0].pod: want {namespace, name, container}"},
      {"containers:\n  - id: \"\"\n", "line 2: containers[0].id: want a non-empty string"},
      {"containers:\n  - id:\n", "line 2: containers[0].id: want a non-empty string, got null"},
      {"containers:\n  - pod: {namespace: ns, name: \"\", container: c}\n",
       "line 2: containers[0].pod.name: want a non-empty string"},
      {"containers:\n  - id: \"a\\tb\"\n", "line 2: containers[0].id: contains control characters"},
      {"containers:\n  - id: a\n    gpus: [\"GPU-1\\u0007\"]\n",
       "line 3: containers[0].gpus[0]: contains control characters"},
      {"containers:\n  - id: a\n    devices:\n      - /dev/x\n      - dev/y\n",
       "line 5: containers[0].devices[1]: --device `dev/y`: host path `dev/y` must be absolute"},
      {"containers:\n  - id: a\n    devices: [\"/dev/x:/y:rwx\"]\n",
       "line 3: containers[0].devices[0]: --device `/dev/x:/y:rwx`: permissions `rwx` must be a non-empty subset of "
       "rwm"},
      {"containers:\n  - id: a\n    devices: [\"/dev/x:/y:r:w\"]\n",
       "line 3: containers[0].devices[0]: --device `/dev/x:/y:r:w`: expected HOST[:CONTAINER[:PERMS]], got 4 fields "
       "(paths with ':' are not supported)"},
      {"containers:\n  - id: a\n    shared: maybe\n",
       "line 3: containers[0].shared: want true or false, got string \"maybe\""},
      {"containers:\n  - id: a\n    devices: /dev/x\n",
       "line 3: containers[0].devices: want a list, got string \"/dev/x\""},
      {"containers:\n  - /dev/x\n", "line 2: containers[0]: want an object, got string \"/dev/x\""},
      {"- id: a\n", "line 1: want an object, got a list"},
      {"containers:\n  - id: a\n  - id: b\n  - id: a\n", "line 4: container `a` is already listed at line 2"},
      {"containers:\n  - pod: {namespace: ns, name: p, container: c}\n    devices: [/dev/x]\n"
       "  - pod: {namespace: ns, name: p, container: c}\n    devices: [/dev/y]\n",
       "line 4: pod `ns/p` container `c` is already listed at line 2"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.text);
    CHECK(failure(row.text) == kFile + ": " + row.want);
  }
}

TEST_CASE("hotplug file: a syntax error names the file and the line, in YAML and JSON") {
  CHECK_THAT(failure("containers:\n  - id: a\n    devices: [/dev/x\n"), StartsWith(kFile + ": line "));
  CHECK_THAT(failure("containers:\n  - id: a\n  - {id: b\n"), StartsWith(kFile + ": line "));
  CHECK_THAT(failure("{\"containers\": [\n  {\"id\": \"a\"},\n  {\"id\": }\n]}\n"), StartsWith(kFile + ": line "));
  CHECK_THAT(failure("containers: []\n---\ncontainers: []\n"), StartsWith(kFile + ": more than one YAML document"));
  // A key given twice is not "the last one wins".
  CHECK_THAT(failure("containers:\n  - id: a\n    id: b\n"), StartsWith(kFile + ": line 3: "));
}

TEST_CASE("hotplug file: an empty device string is refused with one location, not two") {
  // text_field's error is caught by the device parser's catch and located a
  // second time: "line 3: containers[0].devices[0]: line 3: containers[0].devices[0]: ...".
  CHECK(failure("containers:\n  - id: a\n    devices: [\"\"]\n") ==
        kFile + ": line 3: containers[0].devices[0]: want a non-empty string");
  CHECK(failure("containers:\n  - id: a\n    devices: [\"/dev/x\\u0001\"]\n") ==
        kFile + ": line 3: containers[0].devices[0]: contains control characters");
}

TEST_CASE("hotplug file: names YAML 1.1 would read as booleans or numbers are kept as written, or refused") {
  // Kubernetes namespaces, pod and container names are DNS labels: `no`,
  // `y`, `on` and `0123` are all valid ones. Read as YAML 1.1 scalars they
  // would become "false", "true" and "83", and the entry would silently
  // select nothing. Either the text as written, or an error saying where.
  const std::string text =
      "containers:\n  - pod: {namespace: no, name: \"0123\", container: on}\n"
      "  - pod: {namespace: y, name: 0123, container: off}\n";
  try {
    Desired d = parse(text);
    REQUIRE(d.entries.size() == 2);
    CHECK(d.entries[0].pod->ns == "no");
    CHECK(d.entries[0].pod->name == "0123");
    CHECK(d.entries[0].pod->container == "on");
    CHECK(d.entries[1].pod->ns == "y");
    CHECK(d.entries[1].pod->name == "0123");
    CHECK(d.entries[1].pod->container == "off");
  } catch (const Error& e) {
    CHECK_THAT(describe(e), StartsWith(kFile + ": line 2: containers[0].pod.namespace: "));
  }
  // Quoted, they are strings in any case.
  Desired quoted = parse("containers:\n  - pod: {namespace: \"no\", name: \"0123\", container: \"on\"}\n");
  CHECK(*quoted.entries[0].pod == PodSelector{"no", "0123", "on"});
}

TEST_CASE("hotplug file: a bad CDI name is refused naming it, its line and its place in the list") {
  CHECK(failure("containers:\n  - id: a\n    cdi: [\"nvidia.com/gpu\"]\n") ==
        kFile + ": line 3: containers[0].cdi[0]: CDI name `nvidia.com/gpu`: " + [] {
          std::string why;
          cdi::parse_qualified_name("nvidia.com/gpu", &why);
          return why;
        }());
  CHECK_THAT(failure("containers:\n  - id: a\n    cdi: [\"gpu=0\"]\n"), Contains("CDI name `gpu=0`: "));
  // In a block list the line is the bad item's, as for devices.
  CHECK_THAT(failure("containers:\n  - id: a\n    cdi:\n      - nvidia.com/gpu=0\n      - nvidia.com/gpu\n"),
             StartsWith(kFile + ": line 5: containers[0].cdi[1]: CDI name `nvidia.com/gpu`"));
  CHECK(parse("containers:\n  - id: a\n    cdi: [vendor.example.com/class=dev-0_1.x:y]\n").entries[0].cdi ==
        std::vector<std::string>{"vendor.example.com/class=dev-0_1.x:y"});
}

TEST_CASE("hotplug file: a host device two entries want is refused naming both, unless both are shared") {
  const std::string two =
      "containers:\n  - id: a\n    devices: [\"/dev/nvidia3\"]\n  - id: b\n"
      "    devices: [\"/dev/nvidia3:/dev/gpu:r\"]\n";
  CHECK(failure(two) == kFile +
                            ": line 4: device `/dev/nvidia3` is wanted by container `a` (line 2) and by container `b`; "
                            "add `shared: true` to both entries to let them share it");
  // One shared entry is not enough, whichever it is.
  CHECK_THAT(failure("containers:\n  - id: a\n    shared: true\n    devices: [/dev/nvidia3]\n  - id: b\n"
                     "    devices: [/dev/nvidia3]\n"),
             Contains("wanted by container `a` (line 2) and by container `b`"));
  CHECK_THAT(
      failure("containers:\n  - id: a\n    devices: [/dev/nvidia3]\n  - pod: {namespace: ns, name: p, "
              "container: c}\n    shared: true\n    devices: [/dev/nvidia3]\n"),
      Contains("line 4: device `/dev/nvidia3` is wanted by container `a` (line 2) and by pod `ns/p` container `c`"));
  // Both shared: both keep it.
  Desired ok = parse(
      "containers:\n  - id: a\n    shared: true\n    devices: [/dev/nvidia3]\n  - id: b\n"
      "    shared: true\n    devices: [/dev/nvidia3]\n");
  CHECK(ok.entries.size() == 2);
  // GPUs by UUID and CDI names are host devices too.
  CHECK_THAT(failure("containers:\n  - id: a\n    gpus: [GPU-1]\n  - id: b\n    gpus: [GPU-1]\n"),
             Contains("line 4: GPU `GPU-1` is wanted by container `a` (line 2) and by container `b`"));
  CHECK_THAT(failure("containers:\n  - id: a\n    cdi: [x.com/y=0]\n  - id: b\n    cdi: [x.com/y=0]\n"),
             Contains("line 4: CDI device `x.com/y=0` is wanted by container `a` (line 2)"));
  // One entry wanting a node at two container paths is not sharing.
  CHECK(parse("containers:\n  - id: a\n    devices: [/dev/x, \"/dev/x:/dev/y\"]\n").entries.size() == 1);
  // Different devices are not shared.
  CHECK(parse("containers:\n  - id: a\n    devices: [/dev/x]\n  - id: b\n    devices: [/dev/y]\n").entries.size() == 2);
}

TEST_CASE("hotplug file: more than the size limit or the entry limit is refused") {
  std::string big(kMaxDesiredBytes + 1, '#');
  CHECK(failure(big) == kFile + ": larger than " + std::to_string(kMaxDesiredBytes) + " bytes");
  std::string many = "containers:\n";
  for (std::size_t i = 0; i <= kMaxEntries; ++i) many += "  - id: c" + std::to_string(i) + "\n";
  CHECK_THAT(failure(many), StartsWith(kFile + ": line 2: containers: more than 4096 entries"));
}

TEST_CASE("hotplug file: a file of the most entries loads, and a repeat at its end names the first") {
  std::string text = "containers:\n";  // entry i on line 2 + i
  for (std::size_t i = 0; i + 1 < kMaxEntries; ++i)
    text += i % 2 ? "  - pod: {namespace: ns, name: p" + std::to_string(i) + ", container: main}\n"
                  : "  - id: c" + std::to_string(i) + "\n";
  CHECK(parse(text + "  - id: last\n").entries.size() == kMaxEntries);
  CHECK(failure(text + "  - pod: {namespace: ns, name: p1, container: main}\n") ==
        kFile + ": line 4097: pod `ns/p1` container `main` is already listed at line 3");
  CHECK(failure(text + "  - id: c0\n") == kFile + ": line 4097: container `c0` is already listed at line 2");
}

TEST_CASE("hotplug file: check_sharing sees through GPU UUIDs to their nodes") {
  Desired d = parse(
      "containers:\n  - id: a\n    gpus: [GPU-aaaa]\n  - id: b\n    gpus: [GPU-bbbb]\n"
      "  - id: c\n    devices: [/dev/nvidia1]\n");
  auto nodes = [](const std::string& uuid) -> std::string {
    if (uuid == "GPU-aaaa") return "/dev/nvidia0";
    if (uuid == "GPU-bbbb") return "/dev/nvidia1";
    throw Error("GPU `" + uuid + "` is not on this node");
  };
  // Without the map the UUID and the path are different things.
  CHECK_NOTHROW(check_sharing(d));
  // With it, GPU-bbbb is /dev/nvidia1, which entry c also wants.
  std::string e = error_of<Error>([&] { check_sharing(d, nodes); });
  CHECK_THAT(e, StartsWith("line 6: device `/dev/nvidia1`"));
  CHECK_THAT(e, Contains(" is wanted by container `b` (line 4) and by container `c`; add `shared: true` to both "
                         "entries to let them share it"));
  // Two different UUIDs of one GPU (as the driver may list a GPU under two names) are one node.
  Desired two = parse("containers:\n  - id: a\n    gpus: [GPU-aaaa]\n  - id: b\n    gpus: [gpu-AAAA]\n");
  CHECK_NOTHROW(check_sharing(two));
  CHECK_THAT(
      error_of<Error>([&] { check_sharing(two, [](const std::string&) -> std::string { return "/dev/nvidia0"; }); }),
      Contains("/dev/nvidia0"));
  CHECK_THAT(
      error_of<Error>([&] { check_sharing(two, [](const std::string&) -> std::string { return "/dev/nvidia0"; }); }),
      StartsWith("line 4: ") && Contains(" is wanted by container `a` (line 2) and by container `b`"));
  // Different UUIDs on different nodes are fine; an unknown UUID is the map's error.
  CHECK_NOTHROW(
      check_sharing(parse("containers:\n  - id: a\n    gpus: [GPU-aaaa]\n  - id: b\n    gpus: [GPU-bbbb]\n"), nodes));
  CHECK_THAT(error_of<Error>([&] { check_sharing(parse("containers:\n  - id: a\n    gpus: [GPU-cccc]\n"), nodes); }),
             Contains("GPU `GPU-cccc` is not on this node"));
  // Both shared: allowed through the map too.
  Desired shared = parse(
      "containers:\n  - id: a\n    shared: true\n    gpus: [GPU-aaaa]\n  - id: b\n    shared: true\n"
      "    devices: [/dev/nvidia0]\n");
  CHECK_NOTHROW(check_sharing(shared, nodes));
}

TEST_CASE("hotplug file: select picks the one entry for a container") {
  Desired d = parse(
      "containers:\n"
      "  - pod: {namespace: dev, name: box-7, container: main}\n"
      "  - id: cafe\n"
      "  - pod: {namespace: dev, name: box-7, container: side}\n");
  const Entry* e = select(d, "x1", cri("dev", "box-7", "main"));
  REQUIRE(e);
  CHECK(e->line == 2);
  e = select(d, "x2", cri("dev", "box-7", "side"));
  REQUIRE(e);
  CHECK(e->line == 4);
  CHECK(select(d, "x3", cri("dev", "box-8", "main")) == nullptr);
  CHECK(select(d, "x3", cri("prod", "box-7", "main")) == nullptr);
  CHECK(select(d, "x3", cri("dev", "box-7", "other")) == nullptr);

  // A pod entry selects only containers created through CRI: the same names
  // from a specshim.io/pod annotation outside CRI select nothing.
  pod_identity::Identity outside = cri("dev", "box-7", "main");
  outside.cri = false;
  CHECK(select(d, "x1", outside) == nullptr);
  // An id entry selects by id, CRI or not.
  e = select(d, "cafe", pod_identity::Identity{});
  REQUIRE(e);
  CHECK(e->line == 3);
  e = select(d, "cafe", cri("other", "pod", "c"));
  REQUIRE(e);
  CHECK(e->line == 3);
  CHECK(select(d, "caf", pod_identity::Identity{}) == nullptr);
  CHECK(select(Desired{kFile, {}}, "cafe", pod_identity::Identity{}) == nullptr);
}

TEST_CASE("hotplug file: two entries selecting one container is an error naming both lines") {
  Desired d = parse(
      "containers:\n"
      "  - pod: {namespace: dev, name: box-7, container: main}\n"
      "    devices: [/dev/x]\n"
      "  - id: cafe\n"
      "    devices: [/dev/y]\n");
  CHECK(error_of<Error>([&] { select(d, "cafe", cri("dev", "box-7", "main")); }) ==
        kFile +
            ":4: container `cafe` and pod `dev/box-7` container `main` (line 2) select the same container; list its "
            "devices in one entry");
  // Each alone is fine.
  CHECK(select(d, "cafe", cri("dev", "box-7", "other"))->line == 4);
  CHECK(select(d, "beef", cri("dev", "box-7", "main"))->line == 2);
}

TEST_CASE("hotplug config: defaults, and paths must be absolute") {
  auto read = [](const std::string& text) {
    auto doc = config::Document::parse(text, "c.toml");
    auto root = doc.root();
    auto s = root.section("hotplug");
    Config c = read_config(s);
    s.finish();
    return c;
  };
  Config c = read("");
  CHECK_FALSE(c.enabled);
  CHECK(c.desired == "/etc/specshim/hotplug.yaml");
  CHECK(c.proc == "/proc");
  c = read("[hotplug]\nenabled = true\ndesired = \"/srv/want.json\"\nproc = \"/fake/proc\"\n");
  CHECK(c.enabled);
  CHECK(c.desired == "/srv/want.json");
  CHECK(c.proc == "/fake/proc");
  CHECK_THAT(described_error([&] { read("[hotplug]\ndesired = \"want.yaml\"\n"); }),
             Contains("`hotplug.desired`: must be an absolute path"));
  CHECK_THAT(described_error([&] { read("[hotplug]\nproc = \"\"\n"); }),
             Contains("`hotplug.proc`: must be an absolute path"));
  CHECK_THAT(described_error([&] { read("[hotplug]\nenable = true\n"); }), Contains("unknown key `hotplug.enable`"));
  CHECK(c.docker_root == "/var/lib/docker");
  CHECK(read("[hotplug]\ndocker-root = \"/srv/docker\"\n").docker_root == "/srv/docker");
  CHECK_THAT(described_error([&] { read("[hotplug]\ndocker-root = \"docker\"\n"); }),
             Contains("`hotplug.docker-root`: must be an absolute path"));
}

TEST_CASE("hotplug file: a docker entry selects the container dockerd gave that name, whatever its id") {
  Desired d = parse(
      "containers:\n"
      "  - docker: {name: gpu-a}\n"
      "    devices: [/dev/nvidia1]\n"
      "  - id: cafe\n");
  CHECK(d.names_docker());
  CHECK_FALSE(parse("containers:\n  - id: cafe\n").names_docker());
  CHECK(d.entries[0].who() == "docker container `gpu-a`");
  CHECK(d.entries[0].keys() == std::vector<std::string>{"device /dev/nvidia1:/dev/nvidia1:rwm"});
  const Entry* e = select(d, "x1", pod_identity::Identity{}, "gpu-a");
  REQUIRE(e);
  CHECK(e->line == 2);
  // Another name, no name (not dockerd's container), or the name as an id or
  // as a pod's container select nothing.
  CHECK(select(d, "x1", pod_identity::Identity{}, "gpu-b") == nullptr);
  CHECK(select(d, "x1", pod_identity::Identity{}) == nullptr);
  CHECK(select(d, "gpu-a", cri("dev", "box-7", "gpu-a")) == nullptr);
  // An id entry and a docker entry selecting one container: both lines named.
  CHECK(error_of<Error>([&] { select(d, "cafe", pod_identity::Identity{}, "gpu-a"); }) ==
        kFile +
            ":4: container `cafe` and docker container `gpu-a` (line 2) select the same container; list its "
            "devices in one entry");
}

TEST_CASE("hotplug config: bound is pod-allocation by default where a kubelet is configured, else none") {
  auto bound = [](const std::string& text) {
    auto doc = config::Document::parse(text, "c.toml");
    auto root = doc.root();
    auto s = root.section("hotplug");
    return read_config(s, kubelet_configured(root)).bound;
  };
  CHECK(bound("") == Bound::none);
  CHECK(bound("[hotplug]\nbound = \"none\"\n") == Bound::none);
  CHECK(bound("[hotplug]\nbound = \"pod-allocation\"\n") == Bound::pod_allocation);
  CHECK_THAT(described_error([&] { bound("[hotplug]\nbound = \"pod\"\n"); }),
             Contains("`hotplug.bound`: must be \"none\" or \"pod-allocation\", got `pod`"));
  // A config that says the node has a kubelet: bound unless "none" is written.
  for (const char* kubelet : {"[kubelet]\nroot = \"/var/lib/k0s/kubelet\"\n", "[device-plugin]\nenabled = true\n",
                              "[cpuset]\nenabled = true\n",
                              "[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n"}) {
    CAPTURE(kubelet);
    CHECK(bound(kubelet) == Bound::pod_allocation);
    CHECK(bound(std::string(kubelet) + "[hotplug]\nbound = \"none\"\n") == Bound::none);
  }
  // Tables present but saying nothing of a kubelet (the shipped file's empty ones) are not a kubelet.
  CHECK(bound("[kubelet]\nbudget-ms = 1500\n[device-plugin]\nenabled = false\n[cpuset]\n") == Bound::none);
}
