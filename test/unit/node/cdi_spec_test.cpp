// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "specshim/base/error.h"
#include "specshim/base/host_device.h"
#include "specshim/node/cdi.h"
#include "tempdir.h"

using namespace specshim;
using namespace specshim::cdi;
using Catch::Contains;
using Catch::StartsWith;

namespace {

SpecFile parse(const std::string& text) {
  return parse_spec(text, "/etc/cdi/t.yaml");
}

// error returns the message parse_spec throws for text.
std::string error(const std::string& text) {
  try {
    parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// yaml wraps device edits into a one-device spec of the given version.
std::string yaml(const std::string& version, const std::string& edits, const std::string& name = "gpu0") {
  return "cdiVersion: " + version + "\nkind: vendor.com/gpu\ndevices:\n- name: " + name + "\n  containerEdits:\n" +
         edits;
}

}  // namespace

TEST_CASE("cdi spec: every field of 1.1.0 decodes from JSON") {
  SpecFile s = parse(R"({
  "cdiVersion": "1.1.0", "kind": "vendor.com/gpu", "annotations": {"k": "v"},
  "containerEdits": {"env": ["A=1"], "additionalGids": [5, 0],
                     "intelRdt": {"closID": "c", "l3CacheSchema": "L3:0=f", "memBwSchema": "MB:0=50",
                                  "schemata": ["L2:0=3"], "enableMonitoring": true}},
  "devices": [{"name": "gpu0", "annotations": {"a": "b"}, "containerEdits": {
    "deviceNodes": [{"path": "/dev/gpu0", "hostPath": "/dev/null", "type": "c", "major": 1, "minor": 3,
                     "fileMode": 438, "permissions": "rw", "uid": 7, "gid": 8}],
    "mounts": [{"hostPath": "/h", "containerPath": "/c", "options": ["ro", "bind"], "type": "bind"}],
    "hooks": [{"hookName": "createContainer", "path": "/bin/hook", "args": ["hook", "x"], "env": ["E=1"],
               "timeout": 5}],
    "netDevices": [{"hostInterfaceName": "eth1", "name": "net1"}]}}]
})");
  CHECK(s.version == "1.1.0");
  CHECK(s.kind == "vendor.com/gpu");
  CHECK(s.annotations.at("k") == "v");
  CHECK(s.edits.env == std::vector<std::string>{"A=1"});
  CHECK(s.edits.additional_gids == std::vector<std::uint32_t>{5, 0});
  REQUIRE(s.edits.intel_rdt);
  CHECK(s.edits.intel_rdt->clos_id == "c");
  CHECK(s.edits.intel_rdt->l3_cache_schema == "L3:0=f");
  CHECK(s.edits.intel_rdt->mem_bw_schema == "MB:0=50");
  CHECK(s.edits.intel_rdt->schemata == std::vector<std::string>{"L2:0=3"});
  CHECK(s.edits.intel_rdt->enable_monitoring);
  REQUIRE(s.devices.size() == 1);
  const Device& d = s.devices[0];
  CHECK(d.name == "gpu0");
  CHECK(d.annotations.at("a") == "b");
  const DeviceNode& n = d.edits.device_nodes.at(0);
  CHECK(n.path == "/dev/gpu0");
  CHECK(n.host_path == "/dev/null");
  CHECK(n.type == "c");
  CHECK(n.major == 1);
  CHECK(n.minor == 3);
  CHECK(n.file_mode == 438u);
  CHECK(n.permissions == "rw");
  CHECK(n.uid == 7u);
  CHECK(n.gid == 8u);
  CHECK(d.edits.mounts.at(0).options == std::vector<std::string>{"ro", "bind"});
  CHECK(d.edits.mounts.at(0).type == "bind");
  CHECK(d.edits.hooks.at(0).hook_name == "createContainer");
  CHECK(d.edits.hooks.at(0).args == std::vector<std::string>{"hook", "x"});
  CHECK(d.edits.hooks.at(0).timeout == 5);
  CHECK(d.edits.net_devices.at(0).host_interface_name == "eth1");
  CHECK(d.edits.net_devices.at(0).name == "net1");
}

TEST_CASE("cdi spec: YAML reads as YAML 1.1, like upstream's go-yaml v2") {
  SpecFile s = parse(yaml("0.5.0",
                          "    deviceNodes:\n"
                          "    - path: /dev/gpu0\n"
                          "      fileMode: 0666\n"  // octal
                          "      major: 0x10\n"     // hex
                          "      minor: 1_000\n"    // underscores
                          "      uid: 0o17\n",      // Go's 0o prefix
                          "0"));                    // a plain 0 as a name becomes "0"
  const DeviceNode& n = s.devices.at(0).edits.device_nodes.at(0);
  CHECK(n.file_mode == 0666u);
  CHECK(n.major == 16);
  CHECK(n.minor == 1000);
  CHECK(n.uid == 15u);
  CHECK(s.devices.at(0).name == "0");
  // YAML 1.1 booleans become "true"/"false" in a string field, as upstream's YAML-to-JSON step does.
  CHECK(parse(yaml("0.3.0", "    env: [A=1]\n", "n")).devices.at(0).name == "false");
  CHECK(parse(yaml("0.3.0", "    env: [A=1]\n", "\"n\"")).devices.at(0).name == "n");
  // A quoted number is a string, and a string is not an integer.
  CHECK_THAT(error(yaml("0.3.0", "    deviceNodes:\n    - path: /dev/x\n      major: \"1\"\n")),
             Contains("line 8: devices[0].containerEdits.deviceNodes[0].major: want an integer, got string \"1\""));
}

TEST_CASE("cdi spec: JSON and YAML give the same spec") {
  SpecFile j = parse(R"({"cdiVersion":"0.3.0","kind":"vendor.com/gpu",
    "devices":[{"name":"gpu0","containerEdits":{"env":["A=1"],"deviceNodes":[{"path":"/dev/gpu0"}]}}]})");
  SpecFile y = parse(yaml("0.3.0", "    env: [A=1]\n    deviceNodes:\n    - path: /dev/gpu0\n"));
  CHECK(j.devices.at(0).edits.env == y.devices.at(0).edits.env);
  CHECK(j.devices.at(0).edits.device_nodes.at(0).path == y.devices.at(0).edits.device_nodes.at(0).path);
}

TEST_CASE("cdi spec: a '{' document that is YAML, not JSON, still loads (upstream reads every file as YAML)") {
  SpecFile s = parse("{cdiVersion: 0.3.0, kind: vendor.com/gpu, devices: [{name: a, containerEdits: {env: [A=1]}}]}");
  CHECK(s.devices.at(0).name == "a");
  // When it is neither, the JSON error is the one reported.
  CHECK_THAT(error("{\"cdiVersion\": \"0.3.0\",\n \"kind\": ]}"), StartsWith("line 2, column 10: syntax error"));
}

TEST_CASE("cdi spec: versions") {
  std::string edits = "    env: [A=1]\n";
  for (const char* v : {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0", "v0.5.0"}) {
    CAPTURE(v);
    CHECK(parse(yaml(v, edits)).version == v);
  }
  CHECK(error(yaml("0.4.1", edits)) == "line 1: cdiVersion: invalid version \"0.4.1\"");
  CHECK(error(yaml("vv0.5.0", edits)) == "line 1: cdiVersion: invalid version \"vv0.5.0\"");
  CHECK_THAT(error(yaml("0.2.0", edits)), Contains("the spec version must be at least v0.3.0, it declares \"0.2.0\""));
  CHECK_THAT(error("kind: vendor.com/gpu\ndevices: [{name: a, containerEdits: {env: [A=1]}}]\n"),
             Contains("invalid version \"\""));
}

TEST_CASE("cdi spec: each feature needs its minimum version") {
  auto [need, edits, name, why] = GENERATE(table<std::string, std::string, std::string, std::string>({
      {"0.4.0", "    mounts: [{hostPath: /a, containerPath: /b, type: bind}]\n", "a", "mounts[0].type"},
      {"0.5.0", "    deviceNodes: [{path: /dev/a, hostPath: /dev/b}]\n", "a", "deviceNodes[0].hostPath"},
      {"0.5.0", "    env: [A=1]\n", "0", "device name \"0\" starting with a digit"},
      {"0.7.0", "    additionalGids: [5]\n", "a", "additionalGids"},
      {"0.7.0", "    intelRdt: {closID: c}\n", "a", "intelRdt"},
      {"1.1.0", "    intelRdt: {schemata: []}\n", "a", "intelRdt.schemata"},
      {"1.1.0", "    intelRdt: {enableMonitoring: true}\n", "a", "intelRdt.enableMonitoring"},
      {"1.1.0", "    netDevices: [{hostInterfaceName: eth0, name: n0}]\n", "a", "netDevices"},
  }));
  CAPTURE(need, edits);
  std::string below = need == "0.4.0" ? "0.3.0" : need == "0.5.0" ? "0.4.0" : need == "0.7.0" ? "0.6.0" : "1.0.0";
  CHECK_THAT(error(yaml(below, edits, name)),
             Contains("the spec version must be at least v" + need) && Contains(why + " needs it"));
  CHECK_NOTHROW(parse(yaml(need, edits, name)));
}

TEST_CASE("cdi spec: 0.6.0 features (annotations, dots in the class)") {
  CHECK_THAT(error("cdiVersion: 0.5.0\nkind: vendor.com/gpu\nannotations: {a: b}\n"
                   "devices: [{name: a, containerEdits: {env: [A=1]}}]\n"),
             Contains("at least v0.6.0 (annotations needs it)"));
  CHECK_THAT(error("cdiVersion: 0.5.0\nkind: vendor.com/gpu.x\ndevices: [{name: a, containerEdits: {env: [A=1]}}]\n"),
             Contains("at least v0.6.0 (a '.' in the class of kind \"vendor.com/gpu.x\" needs it)"));
  CHECK(parse("cdiVersion: 0.6.0\nkind: vendor.com/gpu.x\ndevices: [{name: a, containerEdits: {env: [A=1]}}]\n").kind ==
        "vendor.com/gpu.x");
}

TEST_CASE("cdi spec: strict decoding names the line and the field") {
  CHECK(error(yaml("0.3.0", "    env: [A=1]\n    bogus: 1\n")) ==
        "line 7: devices[0].containerEdits: unknown field \"bogus\"");
  CHECK(error("cdiVersion: 0.3.0\nkind: a/b\nkind: a/c\n") == "line 3: key \"kind\" already set on line 2");
  CHECK(error("{\"cdiVersion\": \"0.3.0\",\n\"kind\": \"a/b\",\n\"kind\": \"a/c\"}") ==
        "line 3: key \"kind\" already set on line 2");
  // Keys match case-insensitively, as Go's encoding/json does; two spellings of one field are refused.
  CHECK(parse("CDIVERSION: 0.3.0\nKind: a/b\ndevices: [{NAME: x, containeredits: {ENV: [A=1]}}]\n").kind == "a/b");
  CHECK(error("cdiVersion: 0.3.0\nKIND: a/b\nkind: a/b\n") == "line 3: field \"kind\" given twice");
  CHECK(error("cdiVersion: 0.3.0\nkind: [a]\n") == "line 2: kind: want a string, got a list");
  CHECK(error("{\"cdiVersion\": \"0.3.0\", \"kind\": \"a/b\", \"devices\": [{\"name\": \"a\",\n"
              "\"containerEdits\": {\"deviceNodes\": [{\"path\": \"/dev/a\", \"major\":\n1.5}]}}]}") ==
        "line 3: devices[0].containerEdits.deviceNodes[0].major: want an integer, got number 1.5");
  CHECK_THAT(error(yaml("0.3.0", "    deviceNodes: [{path: /dev/a, uid: -1}]\n")), Contains("-1 is out of range"));
  CHECK_THAT(error(yaml("0.3.0", "    deviceNodes: [null]\n")), Contains("want an object, got null"));
  CHECK_THAT(error("cdiVersion: !custom 0.3.0\n"), Contains("line 1: unsupported YAML tag \"!custom\""));
}

TEST_CASE("cdi spec: whole-spec validation as upstream") {
  CHECK(error("") == "empty spec file");
  CHECK(error("# only a comment\n") == "empty spec file");
  CHECK(error("cdiVersion: 0.3.0\nkind: vendor.com/gpu\n") == "line 1: invalid spec, no devices");
  CHECK(error("cdiVersion: 0.3.0\nkind: gpu\ndevices: [{name: a, containerEdits: {env: [A=1]}}]\n") ==
        "line 2: kind \"gpu\": invalid vendor: empty name");
  CHECK(error("cdiVersion: 0.3.0\nkind: vendor.com/g_\ndevices: [{name: a, containerEdits: {env: [A=1]}}]\n") ==
        "line 2: kind \"vendor.com/g_\": invalid class: \"g_\" should end with a letter or digit");
  CHECK(error("cdiVersion: 0.3.0\nkind: v/c\ndevices:\n- name: a\n") ==
        "line 4: devices[0] \"a\": invalid device, empty device edits");
  CHECK(error("cdiVersion: 0.3.0\nkind: v/c\ndevices:\n- name: a\n  containerEdits: {env: [A=1]}\n"
              "- name: a\n  containerEdits: {env: [A=1]}\n") ==
        "line 6: devices[1] \"a\": device \"a\" defined twice (also on line 4)");
  CHECK(error("cdiVersion: 0.3.0\nkind: v/c\ndevices:\n- name: a-\n  containerEdits: {env: [A=1]}\n") ==
        "line 4: devices[0]: invalid device name: \"a-\" should end with a letter or digit");
  // One-character vendor and class load (upstream v1.1.0 panics on them).
  CHECK(parse("cdiVersion: 0.3.0\nkind: v/c\ndevices: [{name: a, containerEdits: {env: [A=1]}}]\n").kind == "v/c");
}

TEST_CASE("cdi spec: containerEdits validation as upstream") {
  auto [edits, want] = GENERATE(table<std::string, std::string>({
      {"    env: [\"=x\"]\n", "containerEdits.env[0]: invalid environment variable \"=x\""},
      {"    env: [NOEQUALS]\n", "invalid environment variable \"NOEQUALS\""},
      {"    deviceNodes: [{type: c}]\n", "deviceNodes[0]: invalid (empty) device path"},
      {"    deviceNodes: [{path: /dev/a, type: x}]\n", "device \"/dev/a\": invalid type \"x\""},
      {"    deviceNodes: [{path: /dev/a, permissions: rwx}]\n", "device \"/dev/a\": invalid permissions \"rwx\""},
      {"    hooks: [{hookName: preStart, path: /x}]\n", "hooks[0]: invalid hook name \"preStart\""},
      {"    hooks: [{hookName: prestart}]\n", "invalid hook \"prestart\" with empty path"},
      {"    hooks: [{hookName: prestart, path: /x, env: [BAD]}]\n", "hooks[0].env[0]: invalid environment variable"},
      {"    mounts: [{containerPath: /c}]\n", "invalid mount, empty host path"},
      {"    mounts: [{hostPath: /h}]\n", "invalid mount, empty container path"},
      {"    intelRdt: {closID: a/b}\n", "intelRdt: invalid closID \"a/b\""},
      {"    intelRdt: {closID: ..}\n", "invalid closID \"..\""},
      {"    netDevices: [{hostInterfaceName: e0, name: n0}, {hostInterfaceName: e0, name: m0}]\n",
       "duplicate hostInterfaceName \"e0\" with names \"n0\" and \"m0\""},
      {"    netDevices: [{hostInterfaceName: e0, name: n0}, {hostInterfaceName: e1, name: n0}]\n",
       "duplicate name \"n0\" with hostInterfaceName \"e0\" and \"e1\""},
      {"    netDevices: [{name: n0}]\n", "empty hostInterfaceName"},
  }));
  CAPTURE(edits);
  CHECK_THAT(error(yaml("1.1.0", edits)), Contains(want));
  CHECK_NOTHROW(parse(yaml("1.1.0", "    intelRdt: {closID: /}\n")));
  CHECK_NOTHROW(
      parse(yaml("1.1.0", "    env: [\"K=\", \"K=a=b\"]\n    deviceNodes: [{path: /dev/a, permissions: mmrw}]\n")));
}

TEST_CASE("cdi spec: hostile documents fail cleanly") {
  std::string deep_json = "{\"a\": " + std::string(100000, '[');
  CHECK_THAT(error(deep_json), Contains("nesting deeper than 32 levels"));
  std::string deep_yaml = "a: " + std::string(100000, '[');
  CHECK_NOTHROW(error(deep_yaml));  // yaml-cpp's own guard or ours; no stack overflow
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c)
    bomb += std::string(1, c) + ": &" + c + " [*" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" +
            char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) +
            ", *" + char(c - 1) + ", *" + char(c - 1) + "]\n";
  CHECK_THAT(error(bomb), Contains("more than 1048576 values"));
  CHECK(error("cdiVersion: 0.3.0\n---\nkind: a/b\n") == "more than one YAML document");
  CHECK_NOTHROW(error(","));  // yaml-cpp reports empty documents forever after this; must not hang
  CHECK_THAT(error("a: [\n"), StartsWith("line "));
  CHECK_THAT(error("\x01\x02\xff"), !Contains("(no error)"));
  // Bytes that are not UTF-8 never reach config.json (found by fuzz:cdi: the spec could not be written).
  CHECK(error("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: \"0\"\n  containerEdits: {env: [\"A=\xff\"]}\n") ==
        "line 5: not valid UTF-8");
  CHECK(error("kind: a.com/b # \xed\xa0\x80\n") == "line 1: not valid UTF-8");  // a surrogate
  CHECK(error("kind: a.com/b # \xc0\xaf\n") == "line 1: not valid UTF-8");      // an overlong '/'
  CHECK(error("kind: a.com/b # \xe2\x82") == "line 1: not valid UTF-8");        // cut short
  CHECK_THAT(error("kind: \"a.com/b\" # caf\xc3\xa9 \xf0\x9f\x98\x80\n"), !Contains("UTF-8"));
}

// A map of 60,000 keys (a spec-level annotations map) is read, and a repeat
// of its first key at the end is found and names both lines, in YAML and JSON.
// Not timed (scripts/bench.sh has the case): a scan of every earlier key took
// seconds here.
TEST_CASE("cdi spec: a 60,000-key map loads, and a repeated key at its end names both lines") {
  constexpr int kKeys = 60000;
  std::string yaml_keys, json_keys;
  for (int i = 0; i < kKeys; ++i) {
    yaml_keys += "  key-" + std::to_string(i) + ": v\n";
    json_keys += " \"key-" + std::to_string(i) + "\": \"v\",\n";
  }
  const std::string head = "cdiVersion: 0.6.0\nkind: vendor.com/gpu\nannotations:\n";
  const std::string devices = "devices:\n- name: gpu0\n  containerEdits: {env: [A=1]}\n";
  CHECK(parse(head + yaml_keys + devices).annotations.size() == kKeys);
  CHECK(error(head + yaml_keys + "  key-0: again\n" + devices) == "line 60004: key \"key-0\" already set on line 4");

  const std::string json_head = "{\"cdiVersion\": \"0.6.0\", \"kind\": \"vendor.com/gpu\",\n\"annotations\": {\n";
  const std::string json_devices = "\"devices\": [{\"name\": \"gpu0\", \"containerEdits\": {\"env\": [\"A=1\"]}}]}\n";
  CHECK(parse(json_head + json_keys + " \"last\": \"v\"},\n" + json_devices).annotations.size() == kKeys + 1);
  CHECK(error(json_head + json_keys + " \"key-0\": \"again\"},\n" + json_devices) ==
        "line 60003: key \"key-0\" already set on line 3");
}

TEST_CASE("cdi spec: a repeated key is found on either side of the switch from scanning to the index") {
  const std::string devices = "devices: [{name: gpu0, containerEdits: {env: [A=1]}}]\n";
  for (int n : {1, 15, 16, 17, 40}) {
    std::string keys;
    for (int i = 0; i < n; ++i) keys += "  k" + std::to_string(i) + ": v\n";
    for (int repeat : {0, n / 2, n - 1}) {
      std::string text = "cdiVersion: 0.6.0\nkind: vendor.com/gpu\nannotations:\n" + keys + "  k" +
                         std::to_string(repeat) + ": again\n" + devices;
      CHECK(error(text) == "line " + std::to_string(4 + n) + ": key \"k" + std::to_string(repeat) +
                               "\" already set on line " + std::to_string(4 + repeat));
    }
    CHECK(parse("cdiVersion: 0.6.0\nkind: vendor.com/gpu\nannotations:\n" + keys + devices).annotations.size() ==
          static_cast<std::size_t>(n));
  }
}

TEST_CASE("cdi spec: YAML structure as upstream's parser reads it (anchors, tags, documents, nulls)") {
  // Anchors and aliases, on scalars and collections, expand to copies.
  SpecFile s = parse(
      "cdiVersion: 0.5.0\nkind: vendor.com/gpu\ndevices:\n"
      "- name: gpu0\n  containerEdits: &e {env: [&v A=1], deviceNodes: [{path: /dev/gpu0}]}\n"
      "- name: gpu1\n  containerEdits: *e\n"
      "- name: gpu2\n  containerEdits: {env: [*v, B=2]}\n");
  CHECK(s.devices.at(1).edits.env == std::vector<std::string>{"A=1"});
  CHECK(s.devices.at(1).edits.device_nodes.at(0).path == "/dev/gpu0");
  CHECK(s.devices.at(2).edits.env == std::vector<std::string>{"A=1", "B=2"});
  CHECK_THAT(error("cdiVersion: 0.5.0\nkind: *nope\n"), Contains("line 2: unknown alias \"*nope\""));
  // Core tags are read; !!str keeps text as written.
  CHECK(parse(yaml("0.5.0", "    env: [A=1]\n", "!!str 0x10")).devices.at(0).name == "0x10");
  CHECK(parse(yaml("0.3.0", "    deviceNodes: [{path: /dev/a, major: !!int 7}]\n"))
            .devices.at(0)
            .edits.device_nodes.at(0)
            .major == 7);
  CHECK_THAT(error("cdiVersion: !<tag:example.com,2000:v> 0.3.0\n"), Contains("unsupported YAML tag"));
  // An empty value, ~ and null are null; quoted they are strings.
  CHECK_THAT(error(yaml("0.3.0", "    deviceNodes: [~]\n")), Contains("want an object, got null"));
  CHECK_THAT(error(yaml("0.3.0", "    deviceNodes:\n    -\n")), Contains("want an object, got null"));
  CHECK_THAT(error(yaml("0.3.0", "    deviceNodes: [\"null\"]\n")), Contains("want an object, got string"));
  // A key must be a string.
  CHECK_THAT(error("? [a]\n: b\n"), Contains("line 1: a mapping key must be a string"));
  CHECK_THAT(error("~: b\n"), Contains("a mapping key must be a string"));
  // Only the first document counts; later ones may be empty, not more.
  std::string one = yaml("0.3.0", "    env: [A=1]\n");
  CHECK(parse("---\n" + one + "...\n").devices.size() == 1);
  CHECK(parse(one + "---\n").devices.size() == 1);
  CHECK(parse(one + "--- ~\n").devices.size() == 1);
  CHECK(error(one + "--- x\n") == "more than one YAML document");
  // Syntax errors carry the line and column, and what the parser was reading.
  CHECK(error("cdiVersion: 0.3.0\nkind: [a\ndevices: x\n") ==
        "line 3: column 8: did not find expected ',' or ']' (while parsing a flow sequence on line 2)");
  CHECK(error("a:\n  b: 1\n c: 2\n") ==
        "line 3: column 2: did not find expected key (while parsing a block mapping on line 1)");
  CHECK_THAT(error("a: \"x\tb\\q\"\n"), StartsWith("line 1: column "));
  // Control characters are refused by the reader, as go-yaml does; the line is counted from the offset.
  CHECK(error("cdiVersion: 0.3.0\nkind: a\x01b\n") == "line 2: control characters are not allowed");
}

TEST_CASE("cdi spec: minimum_version reports the feature") {
  SpecFile s = parse(yaml("1.1.0", "    netDevices: [{hostInterfaceName: e0, name: n}]\n"));
  CHECK(minimum_version(s) == std::pair<std::string, std::string>("1.1.0", "devices[0].containerEdits.netDevices"));
  CHECK(minimum_version(parse(yaml("1.1.0", "    env: [A=1]\n"))).first == "0.3.0");
}

// ---- spec directories ----

namespace {

const char* kSpecA =
    "cdiVersion: 0.3.0\nkind: vendor.com/gpu\ndevices:\n- name: a\n  containerEdits: {env: [FROM=%s]}\n";

std::string spec_a(const std::string& from) {
  std::string s = kSpecA;
  return s.replace(s.find("%s"), 2, from);
}

std::string env_of(const Registry& r, const std::string& name) {
  const DeviceRef* d = r.find(name);
  return d ? d->device->edits.env.at(0) : "(none)";
}

}  // namespace

TEST_CASE("cdi dirs: later dirs override earlier ones, same-dir duplicates conflict") {
  test::TempDir t;
  test::write_file(t / "etc/a.yaml", spec_a("etc"));
  test::write_file(t / "run/a.json", spec_a("run"));
  Registry r = load_specs({(t / "etc").string(), (t / "run").string()});
  CHECK(env_of(r, "vendor.com/gpu=a") == "FROM=run");
  Registry reversed = load_specs({(t / "run").string(), (t / "etc").string()});
  CHECK(env_of(reversed, "vendor.com/gpu=a") == "FROM=etc");

  test::write_file(t / "etc/b.yaml", spec_a("etc-b"));
  Registry only_etc = load_specs({(t / "etc").string()});
  CHECK(only_etc.find("vendor.com/gpu=a") == nullptr);
  REQUIRE(only_etc.conflicts.count("vendor.com/gpu=a") == 1);
  CHECK(only_etc.conflicts.at("vendor.com/gpu=a") ==
        std::vector<std::string>{(t / "etc/a.yaml").string(), (t / "etc/b.yaml").string()});
  // A conflict in a lower dir does not hide the higher dir's definition (upstream deletes the name).
  Registry both = load_specs({(t / "etc").string(), (t / "run").string()});
  CHECK(env_of(both, "vendor.com/gpu=a") == "FROM=run");
  CHECK(both.conflicts.empty());
}

TEST_CASE("cdi dirs: what is scanned, skipped and recorded") {
  test::TempDir t;
  test::write_file(t / "d/a.yaml", spec_a("a"));
  test::write_file(t / "d/x.yml", "not: read");
  test::write_file(t / "d/notes.txt", "not: read");
  test::write_file(t / "d/sub/c.yaml", "not: read");
  test::write_file(t / "d/z.json", "{\"cdiVersion\": \"0.3.0\",\n \"bogus\": 1}");
  std::filesystem::create_directory_symlink(t / "d", t / "link");
  Registry r = load_specs({(t / "missing").string(), (t / "link").string()});
  CHECK(r.dir_errors.empty());
  REQUIRE(r.files.size() == 2);
  CHECK(r.files[0].status == SpecFileResult::Status::loaded);
  CHECK(r.files[0].spec->priority == 1);
  CHECK(r.files[1].path == (t / "link/z.json").string());
  CHECK(r.files[1].status == SpecFileResult::Status::failed);
  CHECK(r.files[1].error == "line 2: unknown field \"bogus\"");
  CHECK(env_of(r, "vendor.com/gpu=a") == "FROM=a");
}

TEST_CASE("cdi dirs: files that cannot define a wanted device are not parsed") {
  test::TempDir t;
  test::write_file(t / "d/a.yaml", spec_a("a"));
  test::write_file(t / "d/b.yaml", "cdiVersion: 0.3.0\nkind: other.com/x\n{{{ broken");
  test::write_file(t / "d/c.json", "{\"kind\": \"vendor.com\\/gpu\", broken");  // an escape: must be parsed
  test::write_file(t / "d/d.yaml", "kind: my-vendor.com/gpu\nx: vendor.com/gpus\ny: [vendor.com/gpu/x]\n{{{ a");
  test::write_file(t / "d/e.yaml", "{kind: 'vendor.com/gpu', devices: [{name: a}]}\n{{{");
  test::write_file(t / "d/f.yaml", "{kind: vendor.com/gpu, devices: [{name: ab}, {name: b-a}]}\n{{{");  // no "a"
  test::write_file(t / "d/g.yaml", "{kind: vendor.com/gpu, devices: [{name: 0x10}]}\n{{{");  // "16" may hide here
  std::set<std::string> wanted{"vendor.com/gpu=a", "vendor.com/gpu=16"};
  Registry r = load_specs({(t / "d").string()}, &wanted);
  std::vector<SpecFileResult::Status> got;
  for (const auto& f : r.files) got.push_back(f.status);
  using S = SpecFileResult::Status;
  CHECK(got == std::vector<S>{S::loaded, S::skipped, S::failed, S::skipped, S::failed, S::failed, S::failed});
  std::set<std::string> only_a{"vendor.com/gpu=a"};
  CHECK(load_specs({(t / "d").string()}, &only_a).files.at(5).status == S::skipped);
  CHECK(load_specs({(t / "d").string()}, &only_a).files.at(6).status == S::skipped);
  Registry all = load_specs({(t / "d").string()});
  CHECK(all.files[1].status == S::failed);
}

TEST_CASE("cdi dirs: an unreadable dir is reported and later dirs still load") {
  // (root reads any directory, so a file stands in for the unreadable dir)
  test::TempDir t;
  test::write_file(t / "notadir", "x");
  test::write_file(t / "d/a.yaml", spec_a("a"));
  Registry r = load_specs({(t / "notadir").string(), (t / "d").string()});
  REQUIRE(r.dir_errors.size() == 1);
  CHECK_THAT(r.dir_errors[0], Contains("notadir`: Not a directory"));
  CHECK(env_of(r, "vendor.com/gpu=a") == "FROM=a");
}

// ---- host device lookup ----

TEST_CASE("host devices: lstat, and symlinks resolved only inside the dev dir") {
  HostDevice null = lstat_device("/dev/null");
  CHECK(null.type == 'c');
  CHECK(null.major == 1);
  CHECK(null.minor == 3);
  CHECK_THROWS_WITH(lstat_device("/nonexistent/dev"),
                    "stat host device node `/nonexistent/dev`: No such file or directory");
  CHECK_THROWS_WITH(lstat_device("/etc/hostname"), Contains("is not a device node (a regular file)"));

  test::TempDir t;
  std::filesystem::create_directory(t / "dev");
  std::filesystem::create_symlink("/dev/null", t / "dev/link");
  std::string link = (t / "dev/link").string();
  CHECK_THROWS_WITH(lstat_device(link), Contains("(a symlink)"));
  CHECK_THROWS_WITH(resolve_device(link, (t / "dev").string(), false),
                    Contains("resolves through a symlink to `/dev/null`, outside " + (t / "dev").string()));
  CHECK(resolve_device(link, (t / "dev").string(), true).minor == 3);
  CHECK(resolve_device(link, "/", false).minor == 3);
  CHECK(resolve_device("/dev/null", "/dev", false).minor == 3);
  std::filesystem::create_symlink("../dev/link", t / "dev/link2");  // a chain, relative, inside until the end
  CHECK_THROWS_WITH(resolve_device((t / "dev/link2").string(), (t / "dev").string(), false),
                    Contains("resolves through a symlink to `/dev/null`"));
  std::filesystem::create_directory_symlink("/dev", t / "dev/devdir");  // a symlinked directory counts too
  CHECK_THROWS_WITH(resolve_device((t / "dev/devdir/null").string(), (t / "dev").string(), false),
                    Contains("resolves through a symlink to `/dev/null`"));
  CHECK(resolve_device((t / "dev/devdir/null").string(), (t / "dev").string(), true).minor == 3);
  CHECK_THROWS_WITH(resolve_device("/dev/stdin", "/dev", false), Contains("resolves through a symlink to `/proc/"));
}
