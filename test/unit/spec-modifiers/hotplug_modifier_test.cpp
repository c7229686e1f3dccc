// SPDX-License-Identifier: Apache-2.0
// The hotplug modifier, run through a chain built from a config as create
// builds it: what the desired-state file wants for a container lands in its
// spec (linux.devices, one exact allow rule each), CDI names go to the cdi
// modifier, and the grant is left as a bundle file. A real host node (c 1:11
// under a temp dir, test/support/host_device.h) stands in for an accelerator.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "error_of.h"
#include "host_device.h"
#include "specshim/base/config.h"
#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/chain.h"
#include "specshim/modifiers/registry.h"
#include "specshim/node/hotplug.h"
#include "tempdir.h"

using namespace specshim;
using Catch::Contains;
using Catch::EndsWith;
using Catch::StartsWith;
using test::described_error;
using test::HostDevice;
using test::replace_all;
using test::write_file;

namespace {

// A CRI container `main` of pod dev/box-7, behind containerd's deny-all rule.
const std::string kSpec = R"({
  "ociVersion": "1.0.2",
  "process": {"user": {"uid": 0, "gid": 0}, "args": ["sh"], "env": ["PATH=/bin"]},
  "root": {"path": "rootfs"},
  "annotations": {
    "io.kubernetes.cri.container-type": "container",
    "io.kubernetes.cri.sandbox-namespace": "dev",
    "io.kubernetes.cri.sandbox-name": "box-7",
    "io.kubernetes.cri.sandbox-id": "5a4d",
    "io.kubernetes.cri.container-name": "main"
  },
  "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]}}
})";

// The pod's sandbox (pause) container.
const std::string kSandbox = R"({
  "ociVersion": "1.0.2",
  "process": {"user": {"uid": 0, "gid": 0}, "args": ["/pause"]},
  "root": {"path": "rootfs"},
  "annotations": {
    "io.kubernetes.cri.container-type": "sandbox",
    "io.kubernetes.cri.sandbox-namespace": "dev",
    "io.kubernetes.cri.sandbox-name": "box-7",
    "io.kubernetes.cri.sandbox-id": "5a4d"
  },
  "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]}}
})";

const char* kId = "c0ffee";

// Setup is a host node, a desired-state file next to it and a fake /proc.
struct Setup {
  HostDevice host;
  std::filesystem::path desired = host.tmp / "hotplug.yaml";
  std::filesystem::path proc = host.tmp / "proc";

  // config is the specshim config: hotplug on, then the chain order given.
  std::string config(const std::string& order = "\"hotplug\"", const std::string& extra = "") const {
    return "[chain]\norder = [" + order + "]\n[hotplug]\nenabled = true\ndesired = \"" + desired.string() +
           "\"\nproc = \"" + proc.string() + "\"\n" + extra;
  }
  void want(const std::string& yaml) const { write_file(desired, replace_all(yaml, "@NODE@", host.node.string())); }
};

Chain build(const std::string& text) {
  auto doc = config::Document::parse(text, "c.toml");
  auto root = doc.root();
  Chain chain = build_chain(root);
  root.finish();
  return chain;
}

Context context(ContainerKind kind = ContainerKind::container, const std::string& id = kId) {
  Context ctx;
  ctx.bundle = "/run/bundle";
  ctx.container_id = id;
  ctx.kind = kind;
  return ctx;
}

const Json& at(const Spec& s, const char* pointer) {
  return s.json().at(Json::json_pointer(pointer));
}

std::vector<std::string> modifiers_on(const std::string& text) {
  std::vector<std::string> names;
  Chain chain = build(text);
  for (const auto& m : chain.modifiers()) names.emplace_back(m->name());
  return names;
}

// Warnings collects what the modifier logs.
struct Warnings {
  static inline std::vector<std::string> lines;
  static void sink(log::Level level, std::string_view msg) {
    if (level >= log::Level::warn) lines.emplace_back(msg);
  }
  Warnings() {
    lines.clear();
    log::set_sink(&Warnings::sink, log::Level::warn);
  }
  ~Warnings() { log::set_sink(nullptr, log::Level::off); }
};

void add_gpu(const std::filesystem::path& proc, const std::string& uuid, int minor, const std::string& address) {
  write_file(proc / "driver/nvidia/gpus" / address / "information",
             "Model: \t\t NVIDIA A100\nGPU UUID: \t " + uuid + "\nBus Location: \t " + address + "\nDevice Minor: \t " +
                 std::to_string(minor) + "\n");
}

}  // namespace

TEST_CASE("hotplug modifier: the selected container gets the node, one allow rule and the grant file") {
  Setup s;
  s.want(
      "containers:\n"
      "  - pod: {namespace: dev, name: box-7, container: main}\n"
      "    devices: [\"@NODE@:/dev/accel0:wr\"]\n");
  Chain chain = build(s.config());
  Spec spec = Spec::parse(kSpec);
  Context ctx = context();
  ChainResult r = chain.run(spec, ctx);
  CHECK(r.changed_by == std::vector<std::string>{"hotplug"});

  // The host node's mode (0666 less the umask), owner and numbers.
  const auto mode = static_cast<std::uint32_t>(std::filesystem::status(s.host.node).permissions()) & 0777;
  CHECK(at(spec, "/linux/devices") == Json::array({{{"path", "/dev/accel0"},
                                                    {"type", "c"},
                                                    {"major", 1},
                                                    {"minor", 11},
                                                    {"fileMode", mode},
                                                    {"uid", 0},
                                                    {"gid", 0}}}));
  CHECK(at(spec, "/linux/resources/devices") == Json::parse(R"([{"allow": false, "access": "rwm"},
                        {"allow": true, "type": "c", "major": 1, "minor": 11, "access": "rw"}])"));

  REQUIRE(ctx.bundle_files.count(hotplug::kGrantFile) == 1);
  const BundleFile& file = ctx.bundle_files.at(hotplug::kGrantFile);
  CHECK(file.mode == 0644);
  hotplug::CreateGrant g = hotplug::parse_grant(file.content, "grant");
  CHECK(g.container == kId);
  CHECK(g.desired == s.desired.string() + ":2");
  REQUIRE(g.devices.size() == 1);
  CHECK(g.devices[0] == hotplug::GrantedDevice{"device " + s.host.node.string() + ":/dev/accel0:rw", "/dev/accel0",
                                               s.host.node.string(), 'c', 1, 11, "rw", mode, 0, 0});
  CHECK(g.rules == std::vector<DeviceRule>{{true, 'c', 1, 11, "rw"}});
  CHECK(g.cdi.empty());
  CHECK(ctx.device_requests.empty());

  // Applied again (the chain's next pass, or the same chain once more), it changes nothing.
  const Json after = spec.json();
  const std::string grant = file.content;
  ChainResult again = chain.run(spec, ctx);
  CHECK(again.changed_by.empty());
  CHECK(spec.json() == after);
  CHECK(ctx.bundle_files.at(hotplug::kGrantFile).content == grant);
}

TEST_CASE("hotplug modifier: devices-cgroup and cdi after it add no second rule") {
  Setup s;
  s.want(
      "containers:\n"
      "  - id: c0ffee\n"
      "    devices: [\"@NODE@:/dev/accel0:r\", \"@NODE@:/dev/accel1:r\"]\n");
  Chain chain = build(s.config("\"hotplug\", \"cdi\", \"devices-cgroup\"", "[cdi]\ncache-dir = \"\"\n"));
  Spec spec = Spec::parse(kSpec);
  Context ctx = context();
  chain.run(spec, ctx);
  CHECK(at(spec, "/linux/devices").size() == 2);
  // One node at two paths is one rule.
  CHECK(at(spec, "/linux/resources/devices") == Json::parse(R"([{"allow": false, "access": "rwm"},
                        {"allow": true, "type": "c", "major": 1, "minor": 11, "access": "r"}])"));
  auto g = hotplug::parse_grant(ctx.bundle_files.at(hotplug::kGrantFile).content, "grant");
  CHECK(g.devices.size() == 2);
  CHECK(g.rules == std::vector<DeviceRule>{{true, 'c', 1, 11, "r"}});
}

TEST_CASE("hotplug modifier: a rule the spec already has is not appended, nor recorded as given") {
  Setup s;
  s.want("containers:\n  - id: c0ffee\n    devices: [\"@NODE@:/dev/accel0:rw\"]\n");
  Spec spec = Spec::parse(kSpec);
  spec.array_at({"linux", "resources", "devices"})
      .push_back(Json{{"allow", true}, {"type", "c"}, {"major", 1}, {"minor", 11}, {"access", "wr"}});
  Context ctx = context();
  build(s.config()).run(spec, ctx);
  CHECK(at(spec, "/linux/resources/devices").size() == 2);
  CHECK(at(spec, "/linux/devices").size() == 1);
  auto g = hotplug::parse_grant(ctx.bundle_files.at(hotplug::kGrantFile).content, "grant");
  CHECK(g.devices.size() == 1);
  CHECK(g.rules.empty());
}

TEST_CASE("hotplug modifier: the node already in the spec at its path is the spec's own, another device there fails") {
  Setup s;
  s.want("containers:\n  - id: c0ffee\n    devices: [\"@NODE@:/dev/accel0\"]\n");
  Spec same = Spec::parse(kSpec);
  same.array_at({"linux", "devices"})
      .push_back(Json{{"path", "/dev/accel0"}, {"type", "c"}, {"major", 1}, {"minor", 11}});
  Context ctx = context();
  build(s.config()).run(same, ctx);
  CHECK(at(same, "/linux/devices").size() == 1);
  // Not given by hotplug: no rule of its own, and the grant does not claim
  // it (reconcile must never take the spec's own device back).
  CHECK(at(same, "/linux/resources/devices").size() == 1);
  CHECK_FALSE(ctx.bundle_files.count("specshim-hotplug.json"));

  Spec other = Spec::parse(kSpec);
  other.array_at({"linux", "devices"})
      .push_back(Json{{"path", "/dev/accel0"}, {"type", "c"}, {"major", 1}, {"minor", 3}});
  Context ctx2 = context();
  CHECK_THAT(described_error([&] { build(s.config()).run(other, ctx2); }),
             Contains("desired-state file " + s.desired.string() +
                      ":2: container path `/dev/accel0` is already another device in the spec's linux.devices"));
}

TEST_CASE("hotplug modifier: an id entry selects by container id, CRI or not") {
  Setup s;
  s.want("containers:\n  - id: c0ffee\n    devices: [\"@NODE@:/dev/accel0\"]\n");
  Spec spec = Spec::parse(R"({"ociVersion": "1.0.2", "process": {"args": ["sh"]}, "root": {"path": "rootfs"}})");
  Context ctx = context(ContainerKind::unknown);
  build(s.config()).run(spec, ctx);
  CHECK(at(spec, "/linux/devices/0/path") == "/dev/accel0");
  CHECK(at(spec, "/linux/resources/devices") ==
        Json::parse(R"([{"allow": true, "type": "c", "major": 1, "minor": 11, "access": "rwm"}])"));
  CHECK(ctx.bundle_files.count(hotplug::kGrantFile) == 1);
}

TEST_CASE("hotplug modifier: who gets nothing") {
  Setup s;
  auto unchanged = [&](const std::string& spec_text, Context ctx) {
    Spec spec = Spec::parse(spec_text);
    const Json before = spec.json();
    ChainResult r = build(s.config()).run(spec, ctx);
    CHECK(r.changed_by.empty());
    CHECK(spec.json() == before);
    CHECK(ctx.bundle_files.empty());
    CHECK(ctx.device_requests.empty());
  };
  SECTION("the sandbox, even by its id") {
    s.want(
        "containers:\n  - id: 5a4d\n    devices: [\"@NODE@:/dev/accel0\"]\n    shared: true\n"
        "  - pod: {namespace: dev, name: box-7, container: main}\n    devices: [\"@NODE@:/dev/accel0\"]\n"
        "    shared: true\n");
    unchanged(kSandbox, context(ContainerKind::sandbox, "5a4d"));
  }
  SECTION("a container no entry selects") {
    s.want(
        "containers:\n  - pod: {namespace: dev, name: box-7, container: side}\n    devices: [\"@NODE@\"]\n"
        "  - pod: {namespace: dev, name: box-8, container: main}\n    cdi: [example.com/accel=0]\n"
        "  - id: c0ffe\n    gpus: [GPU-1]\n");
    unchanged(kSpec, context());
  }
  SECTION("a pod entry, for a container outside CRI that names the pod in specshim.io/pod") {
    s.want("containers:\n  - pod: {namespace: dev, name: box-7, container: main}\n    devices: [\"@NODE@\"]\n");
    unchanged(R"({"ociVersion": "1.0.2", "process": {"args": ["sh"]}, "root": {"path": "rootfs"},
                  "annotations": {"specshim.io/pod": "dev/box-7"}})",
              context(ContainerKind::unknown));
  }
  SECTION("no desired-state file") {
    unchanged(kSpec, context());
  }
  SECTION("an entry that wants nothing") {
    s.want("containers:\n  - id: c0ffee\n");
    unchanged(kSpec, context());
  }
}

TEST_CASE("hotplug modifier: a malformed file gives nothing and a warning naming it, not a failed create") {
  Setup s;
  Warnings warnings;
  for (const std::string& bad :
       {std::string("containers:\n  - id: c0ffee\n    devices: [/dev/x\n"),
        std::string("containers:\n  - id: c0ffee\n    devics: [\"@NODE@\"]\n"),
        std::string(
            "containers:\n  - id: c0ffee\n    devices: [\"@NODE@\"]\n  - id: other\n    devices: [\"@NODE@\"]\n"),
        std::string("\x01\x02\xff")}) {
    CAPTURE(bad);
    Warnings::lines.clear();
    s.want(bad);
    Spec spec = Spec::parse(kSpec);
    const Json before = spec.json();
    Context ctx = context();
    REQUIRE_NOTHROW(build(s.config()).run(spec, ctx));
    CHECK(spec.json() == before);
    CHECK(ctx.bundle_files.empty());
    REQUIRE(Warnings::lines.size() == 1);
    const std::string& w = Warnings::lines[0];
    CHECK_THAT(w, StartsWith("hotplug: " + s.desired.string() + ": line "));
    CHECK_THAT(w, EndsWith("; the container gets no devices from it"));
    // The file is named once: parse_desired's error already starts with it.
    CHECK(w.find(s.desired.string()) == w.rfind(s.desired.string()));
  }
  s.want("containers:\n  - id: c0ffee\n    devics: [\"@NODE@\"]\n");
  Warnings::lines.clear();
  Spec spec = Spec::parse(kSpec);
  Context ctx = context();
  build(s.config()).run(spec, ctx);
  REQUIRE(Warnings::lines.size() == 1);
  CHECK(Warnings::lines[0] == "hotplug: " + s.desired.string() +
                                  ": line 3: containers[0]: unknown field \"devics\"; the container gets no devices "
                                  "from it");
}

TEST_CASE("hotplug modifier: a want that cannot be given fails the create naming the file and line") {
  Setup s;
  SECTION("an unknown GPU UUID") {
    add_gpu(s.proc, "GPU-aaaa", 250, "0000:3b:00.0");
    s.want(
        "containers:\n  - id: other\n  - pod: {namespace: dev, name: box-7, container: main}\n"
        "    gpus: [GPU-zzzz]\n");
    Spec spec = Spec::parse(kSpec);
    Context ctx = context();
    std::string e = described_error([&] { build(s.config()).run(spec, ctx); });
    CHECK_THAT(
        e, Contains("hotplug: desired-state file " + s.desired.string() + ":3: pod `dev/box-7` container `main`: "));
    CHECK_THAT(e, Contains("GPU-zzzz"));
    CHECK_THAT(e, Contains("GPU-aaaa"));  // the GPUs there are
  }
  SECTION("no driver at all") {
    s.want("containers:\n  - id: c0ffee\n    gpus: [GPU-zzzz]\n");
    Spec spec = Spec::parse(kSpec);
    Context ctx = context();
    CHECK_THAT(described_error([&] { build(s.config()).run(spec, ctx); }),
               Contains("desired-state file " + s.desired.string() + ":2: container `c0ffee`: "));
  }
  SECTION("a host node that is not there") {
    s.want("containers:\n  - id: c0ffee\n    devices: [\"@NODE@\", \"@NODE@-missing:/dev/accel1\"]\n");
    Spec spec = Spec::parse(kSpec);
    Context ctx = context();
    std::string e = described_error([&] { build(s.config()).run(spec, ctx); });
    CHECK_THAT(e, Contains("desired-state file " + s.desired.string() + ":2: container `c0ffee`: "));
    CHECK_THAT(e, Contains(s.host.node.string() + "-missing"));
  }
  SECTION("a host node reached through a symlink leading out of /dev") {
    std::filesystem::create_symlink(s.host.node, s.host.tmp / "link");
    s.want("containers:\n  - id: c0ffee\n    devices: [\"" + (s.host.tmp / "link").string() + ":/dev/accel0\"]\n");
    Spec spec = Spec::parse(kSpec);
    Context ctx = context();
    std::string e = described_error([&] { build(s.config()).run(spec, ctx); });
    CHECK_THAT(e, Contains("desired-state file " + s.desired.string() + ":2: container `c0ffee`: "));
    CHECK_THAT(e, Contains("resolves through a symlink"));
  }
  SECTION("a host path that is not a device node") {
    write_file(s.host.tmp / "plain", "");
    s.want("containers:\n  - id: c0ffee\n    devices: [\"" + (s.host.tmp / "plain").string() + "\"]\n");
    Spec spec = Spec::parse(kSpec);
    Context ctx = context();
    CHECK_THAT(described_error([&] { build(s.config()).run(spec, ctx); }),
               Contains("desired-state file " + s.desired.string() + ":2: container `c0ffee`: "));
  }
}

TEST_CASE("hotplug modifier: a known GPU is its /dev/nvidia<minor> node") {
  Setup s;
  add_gpu(s.proc, "GPU-aaaa", 250, "0000:3b:00.0");
  s.want("containers:\n  - id: c0ffee\n    gpus: [gpu-AAAA]\n");
  Spec spec = Spec::parse(kSpec);
  Context ctx = context();
  // No /dev/nvidia250 on this host: the create fails naming the node the UUID maps to.
  CHECK_THAT(described_error([&] { build(s.config()).run(spec, ctx); }), Contains("/dev/nvidia250"));
}

TEST_CASE("hotplug modifier: CDI names become a request from hotplug that cdi resolves") {
  Setup s;
  s.want(
      "containers:\n  - pod: {namespace: dev, name: box-7, container: main}\n"
      "    cdi: [example.com/accel=0, example.com/accel=1, other.org/nic=a]\n");
  SECTION("the request, in memory") {
    // cdi is in the chain, but only hotplug runs: what it hands over is seen.
    Chain chain = build(s.config("\"hotplug\", \"cdi\"", "[cdi]\ncache-dir = \"\"\n"));
    Spec spec = Spec::parse(kSpec);
    Context ctx = context();
    chain.modifiers()[0]->apply(spec, ctx);
    REQUIRE(ctx.device_requests.size() == 2);
    const DeviceRequest& r = ctx.device_requests[0];
    CHECK(r.from == "hotplug");
    CHECK(r.kind == "example.com/accel");
    CHECK(r.scope == DeviceRequest::Scope::names);
    CHECK(r.names == std::vector<std::string>{"example.com/accel=0", "example.com/accel=1"});
    CHECK(r.origin == "the desired-state file " + s.desired.string() + ":2");
    CHECK_FALSE(r.granted);
    CHECK(ctx.device_requests[1].kind == "other.org/nic");
    CHECK(ctx.device_requests[1].names == std::vector<std::string>{"other.org/nic=a"});
    // Not in the spec's annotations, where a tenant could write them too.
    CHECK(spec.json() == Spec::parse(kSpec).json());
    auto g = hotplug::parse_grant(ctx.bundle_files.at(hotplug::kGrantFile).content, "grant");
    CHECK(g.cdi == std::vector<std::string>{"example.com/accel=0", "example.com/accel=1", "other.org/nic=a"});
    CHECK(g.devices.empty());
    // Another pass replaces the request, it does not add a second one.
    chain.modifiers()[0]->apply(spec, ctx);
    CHECK(ctx.device_requests.size() == 2);
  }
  SECTION("with the cdi modifier off, no request, and the grant claims none") {
    Spec spec = Spec::parse(kSpec);
    Context ctx = context();
    build(s.config()).run(spec, ctx);
    CHECK(ctx.device_requests.empty());
    CHECK_FALSE(ctx.bundle_files.count(hotplug::kGrantFile));
  }
  SECTION("resolved by the cdi modifier") {
    write_file(s.host.tmp / "cdi/accel.yaml",
               "cdiVersion: 0.6.0\nkind: example.com/accel\ndevices:\n"
               "- name: \"0\"\n  containerEdits:\n    env: [ACCEL0=yes]\n"
               "- name: \"1\"\n  containerEdits:\n    env: [ACCEL1=yes]\n");
    write_file(s.host.tmp / "cdi/nic.yaml",
               "cdiVersion: 0.6.0\nkind: other.org/nic\ndevices:\n- name: a\n  containerEdits:\n    env: [NIC=a]\n");
    Chain chain = build(s.config("\"hotplug\", \"cdi\"",
                                 "[cdi]\nspec-dirs = [\"" + (s.host.tmp / "cdi").string() + "\"]\ncache-dir = \"\"\n"));
    Spec spec = Spec::parse(kSpec);
    Context ctx = context();
    chain.run(spec, ctx);
    const Json& env = at(spec, "/process/env");
    CHECK(std::find(env.begin(), env.end(), "ACCEL0=yes") != env.end());
    CHECK(std::find(env.begin(), env.end(), "ACCEL1=yes") != env.end());
    CHECK(std::find(env.begin(), env.end(), "NIC=a") != env.end());
  }
  SECTION("a name no spec file has fails the create, saying where it came from") {
    std::filesystem::create_directories(s.host.tmp / "cdi");
    Chain chain = build(s.config("\"hotplug\", \"cdi\"",
                                 "[cdi]\nspec-dirs = [\"" + (s.host.tmp / "cdi").string() + "\"]\ncache-dir = \"\"\n"));
    Spec spec = Spec::parse(kSpec);
    Context ctx = context();
    CHECK_THAT(described_error([&] { chain.run(spec, ctx); }), Contains(s.desired.string() + ":2"));
  }
}

TEST_CASE("hotplug modifier: off unless [hotplug] enabled = true, and then between env-devices and cdi") {
  const std::vector<std::string> defaults = {"passwd", "cdi", "devices-cgroup"};
  CHECK(modifiers_on("") == defaults);
  CHECK(modifiers_on("[hotplug]\ndesired = \"/srv/want.yaml\"\n") == defaults);
  CHECK(modifiers_on("[hotplug]\nenabled = false\n") == defaults);
  CHECK(modifiers_on("[hotplug]\nenabled = true\n") ==
        std::vector<std::string>{"passwd", "hotplug", "cdi", "devices-cgroup"});
  // Off, a file that would select the container does nothing.
  Setup s;
  s.want("containers:\n  - id: c0ffee\n    devices: [\"@NODE@\"]\n");
  auto doc =
      "[chain]\norder = [\"hotplug\", \"devices-cgroup\"]\n[hotplug]\ndesired = \"" + s.desired.string() + "\"\n";
  Spec spec = Spec::parse(kSpec);
  const Json before = spec.json();
  Context ctx = context();
  build(doc).run(spec, ctx);
  CHECK(spec.json() == before);
  CHECK(ctx.bundle_files.empty());
  // A bad [hotplug] key fails the config whether or not it is on.
  CHECK_THROWS_AS(build("[hotplug]\ndesired = \"rel.yaml\"\n"), Error);
}
