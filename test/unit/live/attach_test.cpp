// SPDX-License-Identifier: Apache-2.0
// specshim attach's --device argument, container paths, the record
// <bundle>/specshim-attached.json (schema: docs/attach.md), and release,
// which detach and reconcile share.
#include "specshim/live/attach.h"

#include <catch2/catch.hpp>

#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/base/spec.h"
#include "specshim/live/container.h"

using namespace specshim::live::attach;
using Catch::Contains;
using specshim::Error;
using specshim::test::error_of;

TEST_CASE("attach --device: HOST[:CONTAINER[:PERMS]] with defaults") {
  CHECK(parse_device_arg("/dev/nvidia0") == DeviceArg{"/dev/nvidia0", "/dev/nvidia0", "rwm"});
  CHECK(parse_device_arg("/dev/nvidia0:/dev/gpu") == DeviceArg{"/dev/nvidia0", "/dev/gpu", "rwm"});
  CHECK(parse_device_arg("/dev/nvidia0:/dev/gpu:rw") == DeviceArg{"/dev/nvidia0", "/dev/gpu", "rw"});
  CHECK(parse_device_arg("/dev/nvidia0::r") == DeviceArg{"/dev/nvidia0", "/dev/nvidia0", "r"});
  CHECK(parse_device_arg("/dev/x:/dev/y:mwr") == DeviceArg{"/dev/x", "/dev/y", "rwm"});  // written in rwm order
}

TEST_CASE("attach --device: what is refused, and why") {
  CHECK_THAT(error_of<Error>([] { parse_device_arg("dev/x"); }), Contains("host path `dev/x` must be absolute"));
  CHECK_THAT(error_of<Error>([] { parse_device_arg(""); }), Contains("must be absolute"));
  CHECK_THAT(error_of<Error>([] { parse_device_arg("/dev/x:y"); }), Contains("container path `y` must be absolute"));
  CHECK_THAT(error_of<Error>([] { parse_device_arg("/dev/x:/y:rwx"); }),
             Contains("permissions `rwx` must be a non-empty subset of rwm"));
  CHECK_THAT(error_of<Error>([] { parse_device_arg("/dev/x:/y:rr"); }), Contains("subset of rwm"));
  CHECK_THAT(error_of<Error>([] { parse_device_arg("/dev/x:/y:"); }), Contains("subset of rwm"));
  CHECK_THAT(error_of<Error>([] { parse_device_arg("/dev/x:/y:r:w"); }), Contains("got 4 fields"));
  CHECK_THAT(error_of<Error>([] { parse_device_arg("/dev/x\n"); }), Contains("control characters"));
  CHECK_THAT(error_of<Error>([] { parse_device_arg("/dev/x:/y:q"); }), Contains("--device `/dev/x:/y:q`"));
}

TEST_CASE("attach: canonical permissions") {
  CHECK(canonical_permissions("rwm") == "rwm");
  CHECK(canonical_permissions("mr") == "rm");
  CHECK(canonical_permissions("w") == "w");
  CHECK_FALSE(canonical_permissions(""));
  CHECK_FALSE(canonical_permissions("rwmr"));
  CHECK_FALSE(canonical_permissions("a"));
}

TEST_CASE("attach: container paths stay plain and inside the root") {
  using specshim::live::check_container_path;
  CHECK(check_container_path("/dev/nvidia0") == "");
  CHECK(check_container_path("/dev/dri/card0") == "");
  CHECK_THAT(check_container_path("dev/x"), Contains("absolute"));
  CHECK_THAT(check_container_path("/"), Contains("not /"));
  CHECK_THAT(check_container_path("/dev/../etc/passwd"), Contains(".."));
  CHECK_THAT(check_container_path("/dev/./x"), Contains(". or .."));
  CHECK_THAT(check_container_path("/dev//x"), Contains("empty component"));
  CHECK_THAT(check_container_path("/dev/x/"), Contains("empty component"));
  CHECK_THAT(check_container_path("/dev/\x01x"), Contains("control"));
}

namespace {

Record sample() {
  Record r;
  r.container = "abc";
  RecordedDevice d;
  d.path = "/dev/kmsg-test";
  d.host_path = "/var/tmp/t/kmsg";
  d.type = 'c';
  d.major = 1;
  d.minor = 11;
  d.permissions = "rw";
  d.file_mode = 0620;
  d.uid = 0;
  d.gid = 5;
  d.node = "mknod";
  d.direct = true;
  r.devices.push_back(d);
  d.path = "/dev/nvidiactl";
  d.type = 'b';
  d.major = 195;
  d.minor = 255;
  d.permissions = "rwm";
  d.node = "bind";
  d.direct = false;
  d.cdi = {"nvidia.com/gpu=0", "nvidia.com/gpu=1"};
  r.devices.push_back(d);
  r.mounts.push_back({"/usr/lib/libcuda.so.1",
                      "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                      {"ro", "nosuid", "bind"},
                      "made",
                      true,
                      {"nvidia.com/gpu=0"},
                      {}});
  r.not_applied.push_back({"nvidia.com/gpu=0", "env", "NVIDIA_VISIBLE_DEVICES=0"});
  r.not_applied.push_back({"nvidia.com/gpu=0", "hook", "createContainer /usr/bin/nvidia-ctk hook update-ldcache"});
  r.dirs = {"/dev/dri", "/dev/dri/by-path"};
  return r;
}

}  // namespace

TEST_CASE("attach record: round trip, and the fields and version are as documented") {
  Record r = sample();
  std::string text = record_json(r);
  CHECK(parse_record(text, "f") == r);
  auto j = specshim::Json::parse(text);
  CHECK(j["version"] == 1);
  CHECK(j["container"] == "abc");
  const auto& d = j["devices"][0];
  for (const char* key :
       {"path", "hostPath", "type", "major", "minor", "permissions", "fileMode", "uid", "gid", "node", "direct", "cdi"})
    CHECK(d.contains(key));
  CHECK(d["type"] == "c");
  CHECK(d["fileMode"] == 0620);
  CHECK(j["devices"][1]["cdi"] == specshim::Json::array({"nvidia.com/gpu=0", "nvidia.com/gpu=1"}));
  for (const char* key : {"path", "hostPath", "options", "target", "mounted", "cdi"})
    CHECK(j["mounts"][0].contains(key));
  CHECK(j["notApplied"][1]["edit"] == "hook");
  CHECK(j["dirs"] == specshim::Json::array({"/dev/dri", "/dev/dri/by-path"}));
  CHECK(text.back() == '\n');
  CHECK(record_json(parse_record(text, "f")) == text);  // stable text: an unchanged record is rewritten byte for byte
}

TEST_CASE("attach record: an empty record, and missing optional lists") {
  Record empty{"x", {}, {}, {}, {}, {}, {}, {}};
  CHECK(parse_record(record_json(empty), "f") == empty);
  CHECK(parse_record(R"({"version": 1, "container": "x"})", "f") == empty);
}

TEST_CASE("attach record: what is refused names the file and the field") {
  CHECK_THAT(error_of<Error>([] { parse_record("{", "/b/specshim-attached.json"); }),
             Contains("parse `/b/specshim-attached.json`"));
  CHECK_THAT(error_of<Error>([] { parse_record("[]", "f"); }), Contains("not a JSON object"));
  CHECK_THAT(error_of<Error>([] { parse_record(R"({"version": 2, "container": "x"})", "f"); }),
             Contains("version 2 is not 1"));
  CHECK_THAT(error_of<Error>([] { parse_record(R"({"container": "x"})", "f"); }), Contains("missing `version`"));
  std::string text = record_json(sample());
  auto j = specshim::Json::parse(text);
  j["dirs"] = specshim::Json::array({"dev/dri"});
  CHECK_THAT(error_of<Error>([&] { parse_record(j.dump(), "f"); }),
             Contains("dirs: `dev/dri` is not an absolute path"));
  j = specshim::Json::parse(text);
  j["devices"][1]["type"] = "p";
  CHECK_THAT(error_of<Error>([&] { parse_record(j.dump(), "f"); }), Contains("devices[1]: type `p` is not c or b"));
  j = specshim::Json::parse(text);
  j["devices"][0]["permissions"] = "rx";
  CHECK_THAT(error_of<Error>([&] { parse_record(j.dump(), "f"); }), Contains("devices[0]: permissions"));
  j = specshim::Json::parse(text);
  j["devices"][0]["uid"] = -1;
  CHECK_THAT(error_of<Error>([&] { parse_record(j.dump(), "f"); }), Contains("devices[0]: `uid`: out of range"));
  j = specshim::Json::parse(text);
  j["devices"][0].erase("hostPath");
  CHECK_THAT(error_of<Error>([&] { parse_record(j.dump(), "f"); }), Contains("devices[0]: missing `hostPath`"));
  j = specshim::Json::parse(text);
  j["mounts"][0]["mounted"] = "yes";
  CHECK_THAT(error_of<Error>([&] { parse_record(j.dump(), "f"); }), Contains("mounts[0]: `mounted`"));
}

namespace {

RecordedDevice held_by(std::string path, std::int64_t minor, bool direct, std::vector<std::string> cdi,
                       std::vector<std::string> reconcile) {
  RecordedDevice d;
  d.path = path;
  d.host_path = std::move(path);
  d.major = 195;
  d.minor = minor;
  d.direct = direct;
  d.cdi = std::move(cdi);
  d.reconcile = std::move(reconcile);
  return d;
}

// shared: /dev/nvidia0 attached by hand and by reconcile, /dev/nvidia1 by
// --cdi, a mount and an env edit of the same CDI device, and a CDI device
// the hotplug modifier put in the spec at create.
Record shared() {
  Record r;
  r.container = "c0ffee";
  r.devices = {held_by("/dev/nvidia0", 0, true, {}, {"gpu GPU-0"}),
               held_by("/dev/nvidia1", 1, false, {"nvidia.com/gpu=1"}, {})};
  r.mounts = {{"/usr/lib/libcuda.so", "/usr/lib/libcuda.so", {"ro"}, "made", true, {"nvidia.com/gpu=1"}, {}}};
  r.not_applied = {{"nvidia.com/gpu=1", "env", "A=1"}};
  r.create_cdi = {"nvidia.com/gpu=2"};
  r.reconciled = {"gpu GPU-0", "cdi nvidia.com/gpu=2"};
  return r;
}

}  // namespace

TEST_CASE("release: each reference goes on its own, a node goes when nothing holds it") {
  Released by_hand = release(shared(), Release{{"/dev/nvidia0"}, {}, {}});
  REQUIRE(by_hand.record.devices.size() == 2);
  CHECK_FALSE(by_hand.record.devices[0].direct);  // reconcile still holds it
  CHECK(by_hand.record.devices[0].reconcile == std::vector<std::string>{"gpu GPU-0"});

  Released both = release(shared(), Release{{"/dev/nvidia0"}, {}, {"gpu GPU-0"}});
  REQUIRE(both.record.devices.size() == 1);
  CHECK(both.record.devices[0].path == "/dev/nvidia1");
  CHECK(both.record.reconciled == std::vector<std::string>{"cdi nvidia.com/gpu=2"});

  Released cdi = release(shared(), Release{{}, {"nvidia.com/gpu=1"}, {}});
  CHECK(cdi.record.devices.size() == 1);
  CHECK(cdi.record.mounts.empty());
  CHECK(cdi.record.not_applied.empty());
  CHECK(cdi.in_spec.empty());
}

TEST_CASE("release: a want whose CDI device the spec holds is released and said to stay") {
  Released r = release(shared(), Release{{}, {}, {"cdi nvidia.com/gpu=2", "gpu GPU-9"}});
  CHECK(r.in_spec == std::vector<std::string>{"cdi nvidia.com/gpu=2"});
  CHECK(r.record.create_cdi.empty());
  CHECK(r.record.reconciled == std::vector<std::string>{"gpu GPU-0"});
  CHECK(r.record.devices.size() == 2);  // a want nobody held releases nothing
}

TEST_CASE("release: what is not attached, or held otherwise, is refused naming who holds it") {
  CHECK_THAT(error_of<Error>([] {
               release(shared(), Release{{"/dev/nvidia7"}, {}, {}});
             }),
             Contains("device `/dev/nvidia7` is not attached"));
  CHECK_THAT(error_of<Error>([] {
               release(shared(), Release{{"/dev/nvidia1"}, {}, {}});
             }),
             Contains("device `/dev/nvidia1` was attached by --cdi nvidia.com/gpu=1; detach it with --cdi"));
  CHECK_THAT(error_of<Error>([] {
               release(shared(), Release{{}, {"nvidia.com/gpu=7"}, {}});
             }),
             Contains("CDI device `nvidia.com/gpu=7` is not attached"));
}
