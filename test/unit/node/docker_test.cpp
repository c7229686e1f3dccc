// SPDX-License-Identifier: Apache-2.0
// dockerd's records (specshim/node/docker.h): the name of a container from
// <data-root>/containers/<id>/config.v2.json, and every record refused.
#include "specshim/node/docker.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "error_of.h"
#include "specshim/base/error.h"
#include "tempdir.h"

using namespace specshim;
using Catch::Contains;
using test::described_error;

namespace {

const std::string kId = "3f2a9c0d5e7b41c8a6d2f0e9b8c7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9";

// record writes dockerd's config.v2.json for kId, as 28.x lays it out
// (trimmed to the fields around the ones read).
void record(const test::TempDir& root, const std::string& json) {
  std::filesystem::create_directories(root / "containers" / kId);
  test::write_file(root / "containers" / kId / "config.v2.json", json);
}

}  // namespace

TEST_CASE("docker: ids and names as dockerd makes them") {
  CHECK(docker::is_container_id(kId));
  CHECK_FALSE(docker::is_container_id(kId.substr(1)));
  CHECK_FALSE(docker::is_container_id("3F2A" + kId.substr(4)));
  CHECK_FALSE(docker::is_container_id("../../" + kId.substr(6)));
  CHECK(docker::is_name("gpu-a"));
  CHECK(docker::is_name("A.b_c-1"));
  CHECK_FALSE(docker::is_name(""));
  CHECK_FALSE(docker::is_name("-a"));
  CHECK_FALSE(docker::is_name("a/b"));
  CHECK_FALSE(docker::is_name("a b"));
}

TEST_CASE("docker: a container's name comes from its record, without dockerd's leading slash") {
  test::TempDir root;
  record(root, R"({"StreamConfig":{},"State":{"Running":false},"ID":")" + kId +
                   R"(","Config":{"Hostname":"3f2a9c0d5e7b","Labels":{"gpu-hotplug":"true"}},"Name":"/gpu-a"})");
  CHECK(docker::container_name(root.path(), kId) == "gpu-a");
  // Not dockerd's: an id of another form is not looked up, a missing record
  // or data-root is no name.
  CHECK(docker::container_name(root.path(), "cafe") == std::nullopt);
  CHECK(docker::container_name(root.path(), std::string(64, 'a')) == std::nullopt);
  CHECK(docker::container_name(root / "absent", kId) == std::nullopt);
}

TEST_CASE("docker: a record that is not dockerd's is refused, naming it") {
  test::TempDir root;
  std::string file = (root / "containers" / kId / "config.v2.json").string();
  record(root, R"({"ID":"cafe","Name":"/gpu-a"})");
  CHECK(described_error([&] { docker::container_name(root.path(), kId); }) ==
        "dockerd's record `" + file + "`: its ID is `cafe`, not the container's");
  record(root, R"({"ID":")" + kId + R"(","Name":"gpu-a"})");
  CHECK(described_error([&] { docker::container_name(root.path(), kId); }) ==
        "dockerd's record `" + file + "`: `Name` `gpu-a` is not a name dockerd gives");
  record(root, R"({"ID":")" + kId + R"("})");
  CHECK(described_error([&] { docker::container_name(root.path(), kId); }) ==
        "dockerd's record `" + file + "`: no string `Name`");
  record(root, "{");
  CHECK_THAT(described_error([&] { docker::container_name(root.path(), kId); }), Contains("parse dockerd's record"));
  std::filesystem::remove(file);
  REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
  CHECK_THAT(described_error([&] { docker::container_name(root.path(), kId); }), Contains("not a regular file"));
}
