// SPDX-License-Identifier: Apache-2.0
// Faults at write time: config.json is always the old file or the new one,
// never partial, and a failed create never runs the runtime.
#include <sys/mount.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;

namespace {

// A bundle whose create rewrites config.json (uid 10001 needs a passwd
// entry), with the recording runtime as [runtime] path.
struct RewritingBundle {
  TempDir tmp;
  fs::path dir = tmp / "bundle";
  fs::path record = tmp / "record";
  std::string original;

  RewritingBundle() {
    fs::create_directories(dir / "rootfs" / "etc");
    fs::create_directories(record);
    write_file(dir / "rootfs" / "etc" / "passwd", "root:x:0:0:root:/root:/bin/sh\n");
    write_file(dir / "rootfs" / "etc" / "group", "root:x:0:\n");
    original = R"({"ociVersion":"1.0.2","process":{"user":{"uid":10001,"gid":10001},"args":["sh"],"env":["PATH=/bin"]},"root":{"path":"rootfs"},"mounts":[]})";
    write_file(dir / "config.json", original);
    write_file(tmp / "specshim.toml", "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n");
  }
  ProcessResult create(std::map<std::string, std::string> env = {}) const {
    env["SPECSHIM_CONFIG"] = (tmp / "specshim.toml").string();
    env["RECORD_DIR"] = record.string();
    return run_process({SPECSHIM_BINARY, "--log", (tmp / "log.json").string(), "--log-format", "json", "create",
                        "--bundle", dir.string(), "id"},
                       env);
  }
  std::string log() const { return fs::exists(tmp / "log.json") ? read_file(tmp / "log.json") : ""; }
  bool runtime_ran() const { return fs::exists(record / "argv"); }
  std::vector<std::string> leftovers() const {
    std::vector<std::string> out;
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().find(".specshim-") != std::string::npos) out.push_back(e.path().filename());
    return out;
  }
};

// Mount guard: unmounts on scope exit.
struct Mounted {
  fs::path target;
  ~Mounted() { ::umount2(target.c_str(), MNT_DETACH); }
};

}  // namespace

TEST_CASE("faults: a read-only bundle directory fails the create, config.json intact") {
  RewritingBundle b;
  REQUIRE(::mount(b.dir.c_str(), b.dir.c_str(), nullptr, MS_BIND, nullptr) == 0);
  Mounted guard{b.dir};
  REQUIRE(::mount(nullptr, b.dir.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) == 0);
  auto r = b.create();
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(b.runtime_ran());
  REQUIRE_THAT(b.log(), Catch::Contains("Read-only file system"));
  REQUIRE(read_file(b.dir / "config.json") == b.original);
}

TEST_CASE("faults: a full bundle filesystem fails the create, config.json intact, no temp file") {
  RewritingBundle b;
  // A 64 KiB tmpfs holding the bundle, then filled to the last byte.
  fs::path mnt = b.tmp / "small";
  fs::create_directories(mnt);
  REQUIRE(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") == 0);
  Mounted guard{mnt};
  fs::path dir = mnt / "bundle";
  fs::copy(b.dir, dir, fs::copy_options::recursive);
  // The rootfs stays outside the small fs; point root.path at it.
  std::string spec = b.original;
  spec.replace(spec.find("\"rootfs\""), 8, "\"" + (b.dir / "rootfs").string() + "\"");
  write_file(dir / "config.json", spec);
  {
    std::string filler(4096, 'x');
    std::FILE* f = std::fopen((mnt / "filler").c_str(), "w");
    while (std::fwrite(filler.data(), 1, filler.size(), f) == filler.size()) {
    }
    std::fclose(f);
  }
  auto r = run_process({SPECSHIM_BINARY, "--log", (b.tmp / "log.json").string(), "--log-format", "json", "create",
                        "--bundle", dir.string(), "id"},
                       {{"SPECSHIM_CONFIG", (b.tmp / "specshim.toml").string()}, {"RECORD_DIR", b.record.string()}});
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(b.runtime_ran());
  REQUIRE_THAT(b.log(), Catch::Contains("No space left on device"));
  REQUIRE(read_file(dir / "config.json") == spec);
  for (auto& e : fs::directory_iterator(dir)) REQUIRE(e.path().filename().string().find(".specshim-") == std::string::npos);
}

TEST_CASE("faults: SIGKILL at any step of the write leaves config.json old or new, never partial") {
  // The new text, from an undisturbed run.
  RewritingBundle ref;
  REQUIRE(ref.create().exit_code == 0);
  // Bundle paths differ between bundles; compare with them replaced.
  auto norm = [](const fs::path& dir, std::string text) { return replace_all(std::move(text), dir.string(), "@B@"); };
  std::string rewritten = norm(ref.dir, read_file(ref.dir / "config.json"));
  REQUIRE(rewritten != ref.original);

  // leftovers: the temp files a kill at that point leaves (before the retry
  // removes them). Only a kill between the link of the whole unnamed file to
  // its temp name and the rename over config.json leaves one.
  struct Point {
    const char* name;
    bool expect_new;
    std::size_t leftovers;
  };
  auto p = GENERATE(values<Point>({{"specshim-passwd:after-temp-write", false, 0},
                                   {"specshim-passwd:after-rename", false, 0},
                                   {"config.json:after-temp-write", false, 0},
                                   {"config.json:before-rename", false, 1},
                                   {"config.json:after-rename", true, 0}}));
  INFO("fault point " << p.name);
  RewritingBundle b;
  auto r = b.create({{"SPECSHIM_FAULT", p.name}});
  REQUIRE(r.signaled);
  REQUIRE(r.exit_code == 128 + 9);
  REQUIRE_FALSE(b.runtime_ran());
  std::string now = read_file(b.dir / "config.json");
  REQUIRE(norm(b.dir, now) == (p.expect_new ? rewritten : b.original));
  REQUIRE_NOTHROW(nlohmann::json::parse(now));
  auto left = b.leftovers();
  REQUIRE(left.size() == p.leftovers);
  for (const auto& name : left) REQUIRE(norm(b.dir, read_file(b.dir / name)) == rewritten);  // whole
  // A retry after the crash converges on the same result, runs the runtime,
  // and removes the dead create's temp file.
  REQUIRE(b.create().exit_code == 0);
  REQUIRE(b.runtime_ran());
  REQUIRE(norm(b.dir, read_file(b.dir / "config.json")) == rewritten);
  REQUIRE(b.leftovers().empty());
}

TEST_CASE("faults: SIGKILL while replacing existing generated files leaves them whole, the retry cleans up") {
  RewritingBundle b;
  REQUIRE(b.create().exit_code == 0);
  std::string passwd = read_file(b.dir / "specshim-passwd");
  // The second create rewrites specshim-passwd (it exists now) from the original config.json.
  write_file(b.dir / "config.json", b.original);
  auto point = GENERATE("specshim-passwd:after-temp-write", "specshim-passwd:before-rename");
  INFO("fault point " << point);
  REQUIRE(b.create({{"SPECSHIM_FAULT", point}}).signaled);
  REQUIRE(read_file(b.dir / "specshim-passwd") == passwd);
  REQUIRE(read_file(b.dir / "config.json") == b.original);
  REQUIRE(b.leftovers().size() == (std::string_view(point).ends_with("before-rename") ? 1u : 0u));
  REQUIRE(b.create().exit_code == 0);
  REQUIRE(b.leftovers().empty());
}
