// SPDX-License-Identifier: Apache-2.0
// kubelet-client's pure parsing: the protobuf wire decoder and base64 against
// bytes made by the real protobuf library, and every checkpoint layout.
#include <catch2/catch.hpp>

#include "error_of.h"
#include "fake_kubelet.h"
#include "specshim/kubelet/checkpoint.h"
#include "specshim/kubelet/errors.h"
#include "specshim/kubelet/json.h"
#include "specshim/kubelet/wire.h"
#include "tempdir.h"

using namespace specshim;
using kubelet::AllocateResponse;
using kubelet::Checkpoint;
using kubelet::CheckpointEntry;
using test::CheckpointLayout;
using test::error_of;
using test::FakeCheckpointEntry;

namespace {

AllocateResponse full_response() {
  AllocateResponse r;
  r.envs = {{"NVIDIA_VISIBLE_DEVICES", "GPU-aaaa,GPU-bbbb"}, {"EMPTY", ""}};
  r.mounts = {{"/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/libvgpu.so.2", true},
              {"/tmp/vgpulock", "/tmp/vgpulock", false}};
  r.devices = {{"/dev/nvidia0", "/dev/nvidia0", "rw"}, {"/dev/nvidiactl", "/dev/nvidiactl", "rwm"}};
  r.annotations = {{"cdi.k8s.io/nvidia-device-plugin_x", "k8s.device-plugin.nvidia.com/gpu=GPU-aaaa"}};
  r.cdi_devices = {"nvidia.com/gpu=0", "nvidia.com/gpu=1"};
  return r;
}

}  // namespace

TEST_CASE("decode_allocate_response reads what protobuf writes") {
  AllocateResponse want = full_response();
  CHECK(kubelet::decode_allocate_response(test::encode_allocate_response(want)) == want);
  CHECK(kubelet::decode_allocate_response("") == AllocateResponse{});
}

TEST_CASE("decode_allocate_response keeps large answers whole") {
  AllocateResponse want;
  for (int i = 0; i < 5000; ++i) {
    want.envs["VAR_" + std::to_string(i)] = std::string(100, 'x');
    want.mounts.push_back({"/c/" + std::to_string(i), "/h/" + std::to_string(i), i % 2 == 0});
  }
  std::string bytes = test::encode_allocate_response(want);
  REQUIRE(bytes.size() > 500000);
  CHECK(kubelet::decode_allocate_response(bytes) == want);
}

TEST_CASE("decode_allocate_response skips unknown fields") {
  std::string bytes = test::encode_allocate_response(full_response());
  // field 9 varint 7, field 10 length-delimited "abc", field 11 fixed32, field 12 fixed64
  std::string extra = std::string("\x48\x07", 2) +
                      "\x52\x03"
                      "abc" +
                      std::string("\x5d\x01\x02\x03\x04", 5) + std::string("\x61\x01\x02\x03\x04\x05\x06\x07\x08", 9);
  CHECK(kubelet::decode_allocate_response(extra + bytes + extra) == full_response());
}

TEST_CASE("decode_allocate_response rejects every truncation without crashing") {
  std::string bytes = test::encode_allocate_response(full_response());
  int rejected = 0;
  for (std::size_t n = 1; n < bytes.size(); ++n) {
    try {
      kubelet::decode_allocate_response(std::string_view(bytes).substr(0, n));
    } catch (const kubelet::Protocol& e) {
      CHECK(std::string(e.what()).find("ContainerAllocateResponse") != std::string::npos);
      ++rejected;
    }
  }
  // A cut between two top-level fields is a valid shorter message; any
  // other cut must be rejected.
  CHECK(rejected > static_cast<int>(bytes.size()) / 2);
}

TEST_CASE("decode_allocate_response rejects wrong wire types and garbage") {
  CHECK_THROWS_AS(kubelet::decode_allocate_response(std::string("\x08\x01", 2)), kubelet::Protocol);  // envs as varint
  CHECK_THROWS_AS(kubelet::decode_allocate_response(std::string("\x0b", 1)), kubelet::Protocol);      // group start
  CHECK_THROWS_AS(kubelet::decode_allocate_response(std::string("\x00", 1)), kubelet::Protocol);      // field 0
  CHECK_THROWS_AS(kubelet::decode_allocate_response(std::string(11, '\xff')), kubelet::Protocol);     // endless varint
  CHECK_THROWS_WITH(kubelet::decode_allocate_response(std::string("\x12\x7f", 2)),
                    Catch::Contains("runs past the end"));
}

TEST_CASE("base64_decode is Go's StdEncoding") {
  for (std::string s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    CHECK(kubelet::base64_decode(test::base64_encode(s)) == s);
  CHECK(kubelet::base64_decode("YWI") == "ab");  // unpadded is accepted
  CHECK_THROWS_AS(kubelet::base64_decode("YW*="), kubelet::Protocol);
  CHECK_THROWS_AS(kubelet::base64_decode("Y"), kubelet::Protocol);
}

TEST_CASE("checkpoint: NUMA-keyed layout (1.20+) de-duplicates IDs across nodes") {
  std::vector<FakeCheckpointEntry> entries = {
      {"uid-1",
       "main",
       "nvidia.com/gpu",
       {{"-1", {"GPU-c"}}, {"0", {"GPU-a", "GPU-b"}}, {"1", {"GPU-b"}}},
       full_response()},
      {"uid-1", "main", "example.com/nic", {{"0", {"nic0"}}}, std::nullopt},
      {"uid-1", "sidecar", "nvidia.com/gpu", {{"0", {"GPU-d"}}}, AllocateResponse{}},
      {"uid-2", "main", "nvidia.com/gpu", {{"0", {"GPU-e"}}}, full_response()},
  };
  Checkpoint cp = Checkpoint::parse(
      test::checkpoint_json(entries, {{"nvidia.com/gpu", {"GPU-a", "GPU-b"}}}, CheckpointLayout::numa), "cp");
  CHECK(cp.size() == 4);
  auto main = cp.entries("uid-1", "main");
  REQUIRE(main.size() == 2);
  CHECK(main[0] == CheckpointEntry{"uid-1", "main", "nvidia.com/gpu", {"GPU-c", "GPU-a", "GPU-b"}, full_response()});
  CHECK(main[1] == CheckpointEntry{"uid-1", "main", "example.com/nic", {"nic0"}, std::nullopt});
  auto sidecar = cp.entries("uid-1", "sidecar");
  REQUIRE(sidecar.size() == 1);
  CHECK(sidecar[0].alloc == AllocateResponse{});  // present but empty
  CHECK(cp.entries("uid-3", "main").empty());
  CHECK(cp.registered_devices().at("nvidia.com/gpu") == std::vector<std::string>{"GPU-a", "GPU-b"});
}

// Long lists (a device plugin may advertise thousands of IDs) and many NUMA
// keys are de-duplicated through a hash set past a few items: the result is
// the same as the scan's, first places kept, a repeated NUMA key's last list.
TEST_CASE("checkpoint: long ID lists and many NUMA keys de-duplicate as short ones do") {
  auto id = [](const char* prefix, int i) {
    std::string n = std::to_string(i);
    return prefix + std::string(n.size() < 2 ? 2 - n.size() : 0, '0') + n;
  };
  std::string flat, registered;
  std::vector<std::string> flat_want, registered_want;
  for (int i = 0; i < 30000; ++i) flat += (i ? ",\"" : "\"") + id("d", i % 20000) + "\"";
  for (int i = 0; i < 20000; ++i) flat_want.push_back(id("d", i));
  for (int i = 0; i < 200; ++i) registered += (i ? ",\"" : "\"") + id("d", i % 100) + "\"";
  for (int i = 0; i < 100; ++i) registered_want.push_back(id("d", i));
  std::string numa;
  std::vector<std::string> numa_want;
  for (int k = 39; k >= 0; --k) numa += "\"" + id("", k) + "\":[\"" + id("x", k) + "\",\"shared\"],";
  numa += "\"05\":[\"again\"]";  // a repeated key: its last list counts
  for (int k = 0; k < 40; ++k) {
    numa_want.push_back(k == 5 ? "again" : id("x", k));
    if (k == 0) numa_want.push_back("shared");
  }
  Checkpoint cp = Checkpoint::parse(
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"flat","ResourceName":"r","DeviceIDs":[)" + flat +
          R"(]},{"PodUID":"u","ContainerName":"numa","ResourceName":"r","DeviceIDs":{)" + numa +
          R"(}}],"RegisteredDevices":{"r":[)" + registered + "]}}}",
      "cp");
  CHECK(cp.entries("u", "flat").at(0).device_ids == flat_want);
  CHECK(cp.entries("u", "numa").at(0).device_ids == numa_want);
  CHECK(cp.registered_devices().at("r") == registered_want);
  std::vector<std::string> all = flat_want;
  all.insert(all.end(), numa_want.begin(), numa_want.end());
  CHECK(cp.allocated_devices().at("r") == all);
}

TEST_CASE("checkpoint: entries_for_devices matches the device set of any pod, in any order") {
  std::vector<FakeCheckpointEntry> entries = {
      {"uid-1", "main", "nvidia.com/gpu", {{"0", {"GPU-b"}}, {"1", {"GPU-a", "GPU-b"}}}, full_response()},
      {"uid-2", "main", "nvidia.com/gpu", {{"0", {"GPU-a"}}}, AllocateResponse{}},
      {"uid-3", "main", "example.com/nic", {{"0", {"GPU-a", "GPU-b"}}}, std::nullopt},
      // Another pod's corrupt answer is not decoded unless its devices are asked for.
      {"uid-4", "main", "nvidia.com/gpu", {{"0", {"GPU-z"}}}, std::nullopt},
  };
  std::string text = test::checkpoint_json(entries, {}, CheckpointLayout::numa);
  std::string corrupt = "\"" + test::base64_encode(std::string("\x0a\xff", 2)) + "\"";
  auto at = text.rfind("\"GPU-z\"");
  text.insert(text.find('}', at) + 1, ",\"AllocResp\":" + corrupt);
  Checkpoint cp = Checkpoint::parse(text, "cp");
  auto both = cp.entries_for_devices("nvidia.com/gpu", {"GPU-a", "GPU-b"});
  REQUIRE(both.size() == 1);
  CHECK(both[0].pod_uid == "uid-1");
  CHECK(both[0].alloc == full_response());
  CHECK(cp.entries_for_devices("nvidia.com/gpu", {"GPU-b", "GPU-a", "GPU-a"}).size() == 1);
  CHECK(cp.entries_for_devices("nvidia.com/gpu", {"GPU-a"}).at(0).pod_uid == "uid-2");
  CHECK(cp.entries_for_devices("nvidia.com/gpu", {"GPU-c"}).empty());
  CHECK_THAT(error_of<kubelet::Protocol>([&] { cp.entries_for_devices("nvidia.com/gpu", {"GPU-z"}); }),
             Catch::Contains("AllocResp of pod `uid-4`"));
}

TEST_CASE("checkpoint: flat DeviceIDs layout (<= 1.19)") {
  std::vector<FakeCheckpointEntry> entries = {
      {"uid-1", "main", "nvidia.com/gpu", {{"0", {"GPU-a", "GPU-b"}}}, full_response()}};
  Checkpoint cp = Checkpoint::parse(test::checkpoint_json(entries, {}, CheckpointLayout::flat), "cp");
  auto got = cp.entries("uid-1", "main");
  REQUIRE(got.size() == 1);
  CHECK(got[0].device_ids == std::vector<std::string>{"GPU-a", "GPU-b"});
  CHECK(got[0].alloc == full_response());
  CHECK(cp.registered_devices().empty());  // RegisteredDevices: null
}

TEST_CASE("checkpoint: Go nulls, unknown keys and a missing AllocResp are fine") {
  std::string text = R"({"Data":{"PodDeviceEntries":[
      {"PodUID":"u","ContainerName":"c","ResourceName":"r","DeviceIDs":null,"AllocResp":null,"Future":1},
      {"PodUID":"u","ContainerName":"d","ResourceName":"r","DeviceIDs":{"0":null}}],
    "RegisteredDevices":{"r":null},"Other":{}},"Checksum":1,"BootID":"abc"})";
  Checkpoint cp = Checkpoint::parse(text, "cp");
  CHECK(cp.entries("u", "c") == std::vector<CheckpointEntry>{{"u", "c", "r", {}, std::nullopt}});
  CHECK(cp.entries("u", "d") == std::vector<CheckpointEntry>{{"u", "d", "r", {}, std::nullopt}});
  CHECK(Checkpoint::parse(R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":null}})", "cp").size() == 0);
}

TEST_CASE("checkpoint: malformed files are clear errors naming the file and key") {
  struct Case {
    const char* text;
    const char* message;
  };
  auto c = GENERATE(values<Case>({
      {"", "empty file"},
      {R"({"Data":{"PodDeviceEntries":[{"PodUID":"u")", "not valid JSON (truncated?)"},
      {"[]", "top level: not an object"},
      {R"({"Checksum":33712e5478,"Data":{}})", "top level: not valid JSON: "},  // found by fuzz_checkpoint
      {"{}", "missing `Data`"},
      {R"({"Data":[]})", "Data: not an object"},
      {R"({"Data":{"PodDeviceEntries":{}}})", "PodDeviceEntries: not a list"},
      {R"({"Data":{"PodDeviceEntries":[1]}})", "PodDeviceEntries[0]: not an object"},
      {R"({"Data":{"PodDeviceEntries":[{"ContainerName":"c","ResourceName":"r"}]}})", "missing `PodUID`"},
      {R"({"Data":{"PodDeviceEntries":[{"PodUID":1,"ContainerName":"c","ResourceName":"r"}]}})",
       "PodUID: not a string"},
      {R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r","DeviceIDs":"x"}]}})",
       "DeviceIDs: neither a list nor a NUMA map"},
      {R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r","DeviceIDs":{"0":[1]}}]}})",
       "DeviceIDs[\"0\"]: has a non-string device ID"},
      {R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r","AllocResp":7}]}})",
       "AllocResp: not a base64 string"},
      {R"({"Data":{"RegisteredDevices":[]}})", "RegisteredDevices: not an object"},
  }));
  CAPTURE(c.text);
  CHECK_THAT(error_of<kubelet::Protocol>([&] { Checkpoint::parse(c.text, "/k/cp"); }),
             Catch::Matchers::Contains("read checkpoint `/k/cp`") && Catch::Matchers::Contains(c.message));
}

TEST_CASE("checkpoint: a truncated file at any length is an error, never a crash") {
  std::vector<FakeCheckpointEntry> entries = {{"uid-1", "main", "nvidia.com/gpu", {{"0", {"GPU-a"}}}, full_response()}};
  std::string text = test::checkpoint_json(entries, {{"nvidia.com/gpu", {"GPU-a"}}}, CheckpointLayout::numa);
  for (std::size_t n = 0; n < text.size(); ++n) {
    CAPTURE(n);
    CHECK_THROWS_AS(Checkpoint::parse(text.substr(0, n), "cp"), kubelet::Protocol);
  }
}

TEST_CASE("checkpoint: a corrupt AllocResp fails only the entries asked for") {
  std::string good = test::base64_encode(test::encode_allocate_response(full_response()));
  std::string bad = test::base64_encode(test::encode_allocate_response(full_response()).substr(0, 20));
  auto entry = [](const std::string& container, const std::string& alloc) {
    return R"({"PodUID":"u","ContainerName":")" + container + R"(","ResourceName":"r","AllocResp":")" + alloc + "\"}";
  };
  std::string text = R"({"Data":{"PodDeviceEntries":[)" + entry("ok", good) + "," + entry("bad", bad) + "," +
                     entry("nonsense", "!!!") + "]}}";
  Checkpoint cp = Checkpoint::parse(text, "/k/cp");
  CHECK(cp.entries("u", "ok").at(0).alloc == full_response());
  CHECK_THAT(error_of<kubelet::Protocol>([&] { cp.entries("u", "bad"); }),
             Catch::Matchers::Contains("AllocResp of pod `u` container `bad` resource `r`: ContainerAllocateResponse"));
  CHECK_THAT(error_of<kubelet::Protocol>([&] { cp.entries("u", "nonsense"); }),
             Catch::Matchers::Contains("AllocResp of pod `u` container `nonsense` resource `r`: base64"));
}

TEST_CASE("checkpoint: read() of a missing file is nullopt, of a directory an error") {
  test::TempDir tmp;
  CHECK_FALSE(Checkpoint::read(tmp / "absent").has_value());
  CHECK_THROWS_WITH(Checkpoint::read(tmp.path()), Catch::Contains("not a regular file"));
  test::write_checkpoint(tmp.path(), {{"u", "c", "r", {{"0", {"a"}}}, std::nullopt}}, {}, CheckpointLayout::numa);
  auto cp = Checkpoint::read(tmp / "device-plugins" / "kubelet_internal_checkpoint");
  REQUIRE(cp);
  CHECK(cp->entries("u", "c").at(0).device_ids == std::vector<std::string>{"a"});
}

TEST_CASE("kubelet types survive their JSON form") {
  CheckpointEntry e{"u", "c", "r", {"a", "b"}, full_response()};
  CHECK(nlohmann::json(e).get<CheckpointEntry>() == e);
  kubelet::PodResources p{"ns", "pod", {{"main", {{"nvidia.com/gpu", {"a"}}}}, {"idle", {}}}};
  CHECK(nlohmann::json(p).get<kubelet::PodResources>() == p);
  kubelet::PluginInfo info{"/x.sock", "r", {{"a", "Healthy", {0, 1}}}, ""};
  CHECK(nlohmann::json(info).get<kubelet::PluginInfo>() == info);
}

TEST_CASE("errors keep their kind across the helper boundary") {
  using kubelet::ErrorKind;
  for (auto kind :
       {ErrorKind::other, ErrorKind::unavailable, ErrorKind::deadline, ErrorKind::not_found, ErrorKind::protocol}) {
    try {
      kubelet::throw_error(kubelet::error_kind_from(kubelet::to_string(kind)), "msg");
    } catch (const kubelet::Error& e) {
      CHECK(kubelet::kind_of(e) == kind);
      CHECK(std::string(e.what()) == "msg");
    }
  }
}

TEST_CASE("checkpoint: the reader decodes escapes, takes a repeated key's last value and checks the JSON") {
  // Escapes in keys and values (Go writes \u003c for '<'), a repeated key, an
  // unknown nested value, and every JSON literal.
  std::string text =
      R"({"Data":{"PodDeviceEntries":[{"Pod\u0055ID":"u\u003c1","ContainerName":"x",)"
      R"("ContainerName":"c\"d","ResourceName":"r/\u00e9","DeviceIDs":{"1":["b"],"0":["a","b"],"0":["z"]},)"
      R"("Extra":[true,false,null,-1.5e3,{"k":[]}]}],"RegisteredDevices":{"r":["a"],"r":["b"]}},)"
      R"("Checksum":18446744073709551615})";
  Checkpoint cp = Checkpoint::parse(text, "cp");
  auto got = cp.entries("u<1", "c\"d");
  REQUIRE(got.size() == 1);
  CHECK(got[0].resource == "r/\xc3\xa9");
  CHECK(got[0].device_ids == std::vector<std::string>{"z", "b"});  // NUMA keys in order, the last "0" counts
  CHECK(cp.registered_devices().at("r") == std::vector<std::string>{"b"});

  for (const char* bad : {R"({"Data":{}} x)", R"({"Data":{"a":01}})", R"({"Data":{"a":"\ud800"}})",
                          R"({"Data":{"a":"\x"}})", "{\"Data\":{\"a\":\"\x01\"}}", "{\"Data\":{\"a\":\"\xc0\xaf\"}}",
                          R"({"Data":{"a":tru}})", R"({"Data":{"a":-}})", R"({"Data":{"a":1.}})"}) {
    CAPTURE(bad);
    CHECK_THAT(error_of<kubelet::Protocol>([&] { Checkpoint::parse(bad, "cp"); }),
               Catch::Matchers::Contains("not valid JSON"));
  }
  std::string deep = "{\"Data\":{\"x\":" + std::string(600, '[') + std::string(600, ']') + "}}";
  CHECK_THAT(error_of<kubelet::Protocol>([&] { Checkpoint::parse(deep, "cp"); }),
             Catch::Matchers::Contains("not valid JSON"));
}
