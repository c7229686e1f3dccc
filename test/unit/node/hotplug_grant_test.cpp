// SPDX-License-Identifier: Apache-2.0
// Declarative hot-plug's files on disk (specshim/node/hotplug.h): reading the
// desired-state file under its lock file, and the grant file the hotplug
// modifier leaves in a bundle.
#include <fcntl.h>
#include <sys/file.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "error_of.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/node/hotplug.h"
#include "tempdir.h"

using namespace specshim;
using namespace specshim::hotplug;
using Catch::Contains;
using Catch::StartsWith;
using test::described_error;
using test::error_of;
using test::TempDir;

// ---- read_desired ----

namespace {

// fds_open_on counts this process's descriptors open on path.
int fds_open_on(const std::filesystem::path& path) {
  int n = 0;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code lec;
    auto target = std::filesystem::read_symlink(fd.path(), lec);
    if (!lec && target == path) ++n;
  }
  return n;
}

struct Flock {
  fs::Fd fd;
  Flock(const std::filesystem::path& path, int how) : fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    REQUIRE(fd);
    REQUIRE(::flock(fd.get(), how) == 0);
  }
  void release() { REQUIRE(::flock(fd.get(), LOCK_UN) == 0); }
};

}  // namespace

TEST_CASE("hotplug file: read_desired of a missing file is nothing, with or without a lock file") {
  TempDir tmp;
  CHECK_FALSE(read_desired(tmp / "hotplug.yaml"));
  test::write_file(tmp / "hotplug.yaml.lock", "");
  CHECK_FALSE(read_desired(tmp / "hotplug.yaml"));
}

TEST_CASE("hotplug file: read_desired reads and parses, naming the file in errors") {
  TempDir tmp;
  auto file = tmp / "hotplug.yaml";
  test::write_file(file, "containers:\n  - id: a\n    devices: [/dev/x]\n");
  auto d = read_desired(file);
  REQUIRE(d);
  CHECK(d->file == file.string());
  REQUIRE(d->entries.size() == 1);
  CHECK(d->where(d->entries[0]) == file.string() + ":2");
  test::write_file(file, "containers:\n  - id: a\n    bogus: 1\n");
  CHECK(described_error([&] { read_desired(file); }) ==
        file.string() + ": line 3: containers[0]: unknown field \"bogus\"");
  // A directory is not a desired-state file.
  std::filesystem::remove(file);
  std::filesystem::create_directory(file);
  CHECK_THROWS_AS(read_desired(file), Error);
}

TEST_CASE("hotplug file: a shared lock (another reader) does not hold read_desired up") {
  TempDir tmp;
  auto file = tmp / "hotplug.yaml";
  test::write_file(file, "containers:\n  - id: a\n");
  Flock reader(tmp / "hotplug.yaml.lock", LOCK_SH);
  auto d = read_desired(file);
  REQUIRE(d);
  CHECK(d->entries.size() == 1);
}

TEST_CASE("hotplug file: read_desired waits while a writer holds FILE.lock, then reads what it wrote") {
  TempDir tmp;
  auto file = tmp / "hotplug.yaml";
  auto lock_path = tmp / "hotplug.yaml.lock";
  test::write_file(file, "containers:\n  - id: old\n");
  Flock writer(lock_path, LOCK_EX);  // an open file description of its own
  REQUIRE(fds_open_on(lock_path) == 1);

  auto reading = std::async(std::launch::async, [&] { return read_desired(file); });
  // The reader has opened the lock file: from here on it cannot return
  // before the lock is released (or its 10 s are up).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (fds_open_on(lock_path) < 2 && reading.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::yield();
  }
  CHECK(reading.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  // The writer replaces the file under its lock; the reader sees the new one.
  test::write_file(file, "containers:\n  - id: new\n");
  CHECK(reading.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  writer.release();
  auto d = reading.get();
  REQUIRE(d);
  REQUIRE(d->entries.size() == 1);
  CHECK(d->entries[0].id == "new");
}

TEST_CASE("hotplug file: a lock file that is a symlink is refused") {
  TempDir tmp;
  auto file = tmp / "hotplug.yaml";
  test::write_file(file, "containers: []\n");
  test::write_file(tmp / "elsewhere", "");
  std::filesystem::create_symlink(tmp / "elsewhere", tmp / "hotplug.yaml.lock");
  CHECK_THAT(error_of<Error>([&] { read_desired(file); }), Contains("open lock file `" + file.string() + ".lock`"));
}

// ---- the grant file ----

namespace {

hotplug::CreateGrant sample_grant() {
  hotplug::CreateGrant g;
  g.container = "0123abcd";
  g.desired = "/etc/specshim/hotplug.yaml:3";
  g.devices.push_back(
      {"device /dev/kmsg:/dev/console-log:r", "/dev/console-log", "/dev/kmsg", 'c', 1, 11, "r", 0620, 0, 5});
  g.devices.push_back({"gpu GPU-aaaa", "/dev/nvidia0", "/dev/nvidia0", 'c', 195, 0, "rwm", 0666, 0, 0});
  g.devices.push_back({"device /dev/sdb:/dev/disk:rw", "/dev/disk", "/dev/sdb", 'b', 8, 16, "rw", 0660, 0, 6});
  g.rules.push_back({true, 'c', 1, 11, "r"});
  g.rules.push_back({true, 'c', 195, 0, "rwm"});
  g.rules.push_back({true, 'b', 8, 16, "rw"});
  g.cdi = {"nvidia.com/gpu=1", "vendor.com/x=y"};
  return g;
}

}  // namespace

TEST_CASE("hotplug grant: round trip, and the fields are as documented") {
  hotplug::CreateGrant g = sample_grant();
  std::string text = grant_json(g);
  CHECK(text.back() == '\n');
  CHECK(parse_grant(text, "f") == g);
  CHECK(grant_json(parse_grant(text, "f")) == text);
  auto j = Json::parse(text);
  CHECK(j["container"] == "0123abcd");
  CHECK(j["desired"] == "/etc/specshim/hotplug.yaml:3");
  const Json& d = j["devices"][0];
  CHECK(d == Json::parse(R"({"key": "device /dev/kmsg:/dev/console-log:r", "path": "/dev/console-log",
                             "hostPath": "/dev/kmsg", "type": "c", "major": 1, "minor": 11, "permissions": "r",
                             "fileMode": 400, "uid": 0, "gid": 5})"));
  CHECK(j["devices"][2]["type"] == "b");
  CHECK(j["rules"][0] == Json::parse(R"({"allow": true, "type": "c", "major": 1, "minor": 11, "access": "r"})"));
  CHECK(j["cdi"] == Json::array({"nvidia.com/gpu=1", "vendor.com/x=y"}));
  hotplug::CreateGrant empty{"x", "f:1", {}, {}, {}};
  CHECK(parse_grant(grant_json(empty), "f") == empty);
}

TEST_CASE("hotplug grant: rules round trip, wildcards as null and type a") {
  std::vector<DeviceRule> rules = {
      {false, 'a', std::nullopt, std::nullopt, "rwm"},
      {true, 'c', std::nullopt, std::nullopt, "m"},
      {true, 'b', 8, std::nullopt, "rw"},
      {true, 'c', std::nullopt, 3, "r"},
      {false, 'c', 4294967295, 0, "w"},
  };
  for (const auto& r : rules) {
    Json j = rule_json(r);
    CAPTURE(j.dump());
    CHECK(rule_from_json(j, "rules[0]") == r);
  }
  CHECK(rule_json(rules[0]) == Json::parse(R"({"allow": false, "type": "a", "major": null, "minor": null,
                                               "access": "rwm"})"));
  // As OCI writes them: an absent major or minor is the wildcard too, access in any order.
  CHECK(rule_from_json(Json::parse(R"({"allow": true, "type": "c", "access": "mr"})"), "w") ==
        DeviceRule{true, 'c', std::nullopt, std::nullopt, "rm"});
}

TEST_CASE("hotplug grant: what is refused names the file and the field") {
  const std::string file = "/b/specshim-hotplug.json";
  Json good = Json::parse(grant_json(sample_grant()));
  auto refused = [&](const Json& j) { return error_of<Error>([&] { parse_grant(j.dump(), file); }); };
  const std::string where = "grant `" + file + "`";

  CHECK_THAT(error_of<Error>([&] { parse_grant("{", file); }), StartsWith("parse `" + file + "`: "));
  CHECK(refused(Json::array()) == where + ": not a JSON object");
  Json j = good;
  j.erase("container");
  CHECK(refused(j) == where + ": missing `container`");
  j = good;
  j["desired"] = 3;
  CHECK_THAT(refused(j), StartsWith(where + ": `desired`: "));
  j = good;
  j["devices"] = Json::object();
  CHECK(refused(j) == where + ": `devices` is not an array");
  j = good;
  j.erase("rules");
  CHECK(refused(j) == where + ": `rules` is not an array");
  j = good;
  j["devices"][1] = 7;
  CHECK(refused(j) == where + ": devices[1]: not an object");
  j = good;
  j["devices"][1].erase("hostPath");
  CHECK(refused(j) == where + ": devices[1]: missing `hostPath`");
  j = good;
  j["devices"][0]["type"] = "a";  // a node is c or b
  CHECK(refused(j) == where + ": devices[0]: type `a` is unknown");
  j = good;
  j["devices"][0]["permissions"] = "rr";
  CHECK(refused(j) == where + ": devices[0]: `permissions` must be a non-empty subset of rwm");
  j = good;
  j["devices"][2]["gid"] = -1;
  CHECK(refused(j) == where + ": devices[2]: `gid`: out of range");
  j = good;
  j["devices"][2]["fileMode"] = 4294967296LL;
  CHECK(refused(j) == where + ": devices[2]: `fileMode`: out of range");
  j = good;
  j["devices"][2]["major"] = "8";
  CHECK_THAT(refused(j), StartsWith(where + ": devices[2]: `major`: "));
  j = good;
  j["rules"][1]["type"] = "x";
  CHECK(refused(j) == where + ": rules[1]: type `x` is unknown");
  j = good;
  j["rules"][2].erase("allow");
  CHECK(refused(j) == where + ": rules[2]: missing `allow`");
  j = good;
  j["rules"][0]["access"] = "";
  CHECK(refused(j) == where + ": rules[0]: `access` must be a non-empty subset of rwm");
  j = good;
  j["rules"][0]["major"] = "1";
  CHECK_THAT(refused(j), StartsWith(where + ": rules[0]: `major`: "));
  j = good;
  j["rules"][0] = "c 1:11 r";
  CHECK(refused(j) == where + ": rules[0]: not an object");
  j = good;
  j["cdi"] = Json::array({1});
  CHECK_THAT(refused(j), StartsWith(where + ": `cdi`: "));
  j = good;
  j.erase("cdi");
  CHECK(refused(j) == where + ": missing `cdi`");
}

TEST_CASE("hotplug grant: read_grant is nothing without the file, and names it when it is bad") {
  TempDir bundle;
  CHECK_FALSE(read_grant(bundle.path()));
  test::write_file(bundle / kGrantFile, grant_json(sample_grant()));
  auto g = read_grant(bundle.path());
  REQUIRE(g);
  CHECK(*g == sample_grant());
  test::write_file(bundle / kGrantFile, "[]");
  CHECK_THAT(error_of<Error>([&] { read_grant(bundle.path()); }),
             Contains("grant `" + (bundle / kGrantFile).string() + "`: not a JSON object"));
}
