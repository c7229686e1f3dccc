// SPDX-License-Identifier: Apache-2.0
// userns.h: reading a spec's user namespace (its mappings, or the joined
// namespace's from /proc), mapping ids both ways, and the device-node rules
// cdi and device-plugin share in a user namespace.
#include "specshim/node/userns.h"

#include <catch2/catch.hpp>

#include "specshim/base/error.h"
#include "tempdir.h"

using namespace specshim;
using specshim::test::TempDir;

namespace {

Spec spec_of(const char* json) {
  return Spec::parse(json);
}

constexpr const char* kMapped = R"({"linux":{"namespaces":[{"type":"mount"},{"type":"user"}],
  "uidMappings":[{"containerID":0,"hostID":100000,"size":65536}],
  "gidMappings":[{"containerID":0,"hostID":200000,"size":1000},{"containerID":1000,"hostID":300000,"size":64536}]}})";

}  // namespace

TEST_CASE("userns: a spec without a user namespace has none") {
  CHECK_FALSE(userns::read(spec_of(R"({"linux":{"namespaces":[{"type":"mount"}]}})")));
  CHECK_FALSE(userns::read(spec_of(R"({"process":{}})")));
  CHECK_FALSE(userns::has_user_namespace(spec_of(R"({"linux":{"uidMappings":[]}})")));
}

TEST_CASE("userns: mappings map ids both ways, range by range") {
  auto ns = userns::read(spec_of(kMapped));
  REQUIRE(ns);
  CHECK(ns->known());
  CHECK(ns->path.empty());
  CHECK(ns->uids.to_host(0) == 100000u);
  CHECK(ns->uids.to_host(65535) == 165535u);
  CHECK_FALSE(ns->uids.to_host(65536));
  CHECK(ns->gids.to_host(999) == 200999u);
  CHECK(ns->gids.to_host(1000) == 300000u);
  CHECK(ns->uids.to_container(100000) == 0u);
  CHECK_FALSE(ns->uids.to_container(0));  // host root is nobody inside
  CHECK_FALSE(ns->uids.to_container(99999));
  CHECK(ns->gids.describe() == "0-999 → 200000-200999, 1000-65535 → 300000-364535");
}

TEST_CASE("userns: mappings alone make a user namespace, as runc decides") {
  auto ns = userns::read(spec_of(R"({"linux":{"uidMappings":[{"containerID":0,"hostID":5,"size":1}]}})"));
  REQUIRE(ns);
  CHECK_FALSE(ns->known());  // no gid mapping
}

TEST_CASE("userns: a malformed mapping names its field") {
  auto err = [](const char* maps) {
    try {
      userns::read(
          Spec::parse(std::string(R"({"linux":{"namespaces":[{"type":"user"}],"uidMappings":)") + maps + "}}"));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(err(R"({})") == "linux.uidMappings is not an array");
  CHECK(err(R"([{"containerID":0,"hostID":-1,"size":1}])") ==
        "linux.uidMappings[0].hostID must be an id from 0 to 4294967295");
  CHECK(err(R"([{"containerID":0,"hostID":1,"size":0}])") ==
        "linux.uidMappings[0]: size 0 is empty or runs past id 4294967295");
  CHECK(err(R"([{"containerID":0,"hostID":4294967295,"size":2}])") ==
        "linux.uidMappings[0]: size 2 is empty or runs past id 4294967295");
  CHECK(err(R"([3])") == "linux.uidMappings[0] is not an object");
}

TEST_CASE("userns: a joined /proc/PID/ns/user without mappings takes that process's maps") {
  TempDir proc;
  test::write_file(proc / "4242/uid_map", "         0     100000      65536\n");
  test::write_file(proc / "4242/gid_map", "         0     100000      65536\n     65536     300000          1\n");
  auto ns =
      userns::read(spec_of(R"({"linux":{"namespaces":[{"type":"user","path":"/proc/4242/ns/user"}]}})"), proc.path());
  REQUIRE(ns);
  CHECK(ns->path == "/proc/4242/ns/user");
  REQUIRE(ns->known());
  CHECK(ns->uids.to_host(10001) == 110001u);
  CHECK(ns->gids.to_host(65536) == 300000u);

  SECTION("any other path leaves them unknown") {
    auto other =
        userns::read(spec_of(R"({"linux":{"namespaces":[{"type":"user","path":"/run/userns/pod"}]}})"), proc.path());
    REQUIRE(other);
    CHECK_FALSE(other->known());
  }
  SECTION("mappings in the spec win over the namespace's") {
    auto given = userns::read(spec_of(R"({"linux":{"namespaces":[{"type":"user","path":"/proc/4242/ns/user"}],
      "uidMappings":[{"containerID":0,"hostID":7,"size":1}],"gidMappings":[{"containerID":0,"hostID":7,"size":1}]}})"),
                              proc.path());
    CHECK(given->uids.to_host(0) == 7u);
  }
  SECTION("a malformed map file is an error naming it") {
    test::write_file(proc / "4242/uid_map", "0 100000\n");
    CHECK_THROWS_WITH(
        userns::read(spec_of(R"({"linux":{"namespaces":[{"type":"user","path":"/proc/4242/ns/user"}]}})"), proc.path()),
        Catch::Contains("uid_map: line 1 is not `inside outside count`"));
  }
}

TEST_CASE("userns: the initial namespace's uid_map parses") {
  auto map = userns::parse_id_map("         0          0 4294967295\n", "uid_map");
  CHECK(map.to_host(4294967294u) == 4294967294u);
  CHECK_THROWS(userns::parse_id_map("0 0 4294967296\n", "uid_map"));
  CHECK_THROWS(userns::parse_id_map("0 0 1 junk\n", "uid_map"));
}

TEST_CASE("userns: a node is a bind mount only in a user namespace, and only when its host file is elsewhere") {
  Spec plain = spec_of(R"({"linux":{}})");
  Spec mapped = spec_of(kMapped);
  CHECK_FALSE(userns::binds_device(plain, "/dev/gpu0", "/dev/nvidia3"));
  CHECK(userns::binds_device(mapped, "/dev/gpu0", "/dev/nvidia3"));
  CHECK_FALSE(userns::binds_device(mapped, "/dev/nvidia3", "/dev/nvidia3"));
  CHECK_FALSE(userns::binds_device(mapped, "/dev/nvidia3", ""));
  CHECK(userns::device_bind_mount("/dev/gpu0", "/dev/nvidia3") ==
        Json::parse(R"({"destination":"/dev/gpu0","type":"bind","source":"/dev/nvidia3","options":["bind"]})"));
}

TEST_CASE("userns: erase_device_entry removes the entries at a path and says whether there were any") {
  Spec s = spec_of(R"({"linux":{"devices":[{"path":"/dev/a"},{"path":"/dev/b"},{"path":"/dev/a"}]}})");
  CHECK(userns::erase_device_entry(s, "/dev/a"));
  CHECK(s.json()["linux"]["devices"] == Json::parse(R"([{"path":"/dev/b"}])"));
  CHECK_FALSE(userns::erase_device_entry(s, "/dev/a"));
  Spec none = spec_of(R"({"linux":{}})");
  CHECK_FALSE(userns::erase_device_entry(none, "/dev/a"));
  CHECK(none.json() == Json::parse(R"({"linux":{}})"));
}
