// SPDX-License-Identifier: Apache-2.0
// The create core (specshim/modifiers/create.h) on a bundle directory and on a spec in
// memory, the way a front-end without a bundle on disk calls it.
#include "specshim/modifiers/create.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "error_of.h"
#include "specshim/base/error.h"
#include "tempdir.h"

using namespace specshim;
using specshim::test::TempDir;
namespace stdfs = std::filesystem;

namespace {

// A chain of passwd alone: it reads the rootfs and writes a file that the
// spec mounts, the two things a bundle stands for.
constexpr const char* kConfig = "[chain]\norder = [\"passwd\"]\n";

std::string spec_text(const stdfs::path& root) {
  return R"({"ociVersion":"1.1.0","process":{"user":{"uid":10001,"gid":10001},"env":["PATH=/bin"]},)"
         R"("root":{"path":")" +
         root.string() + R"("},"mounts":[]})" + "\n";
}

struct Rootfs {
  TempDir dir;
  stdfs::path path = dir / "rootfs";
  Rootfs() {
    test::write_file(path / "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    test::write_file(path / "etc/group", "root:x:0:\n");
  }
};

create::Outcome modify(create::Bundle& bundle, Context ctx = {}) {
  auto doc = config::Document::parse(kConfig, "c.toml");
  auto root = doc.root();
  return create::modify(bundle, root, std::move(ctx));
}

std::vector<std::string> sources(const Json& spec) {
  std::vector<std::string> out;
  for (const auto& m : spec["mounts"]) out.push_back(m["source"]);
  return out;
}

}  // namespace

TEST_CASE("create core: a spec in memory is modified with no bundle on disk, its files go to the front-end's dir") {
  Rootfs rootfs;
  TempDir state;
  stdfs::path files = state / "ctr-1";  // made by store, not before
  create::SpecInMemory bundle(Spec::parse(spec_text(rootfs.path)), files);

  create::Outcome out = modify(bundle);
  REQUIRE(out.changed());
  REQUIRE(out.ctx.bundle == files);
  CHECK(sources(out.spec.json()) ==
        std::vector<std::string>{(files / "specshim-passwd").string(), (files / "specshim-group").string()});
  CHECK_FALSE(stdfs::exists(files));  // modify stores nothing
  CHECK(bundle.spec().json()["mounts"].empty());

  create::commit(bundle, out);
  CHECK(bundle.spec().json() == out.spec.json());
  CHECK(test::read_file(files / "specshim-passwd").find(":10001:10001:") != std::string::npos);
  struct stat st {};
  REQUIRE(::stat(files.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);  // only root, who bind-mounts the files, goes in
  CHECK_FALSE(stdfs::exists(state / "config.json"));
}

TEST_CASE("create core: a bundle directory keeps config.json's mode and is not written when nothing changes") {
  Rootfs rootfs;
  TempDir dir;
  test::write_file(dir / "config.json", spec_text(rootfs.path));
  REQUIRE(::chmod((dir / "config.json").c_str(), 0600) == 0);
  create::BundleDir bundle(dir.path());

  create::Outcome out = modify(bundle);
  REQUIRE(out.spec_changed());
  create::commit(bundle, out);
  struct stat st {};
  REQUIRE(::stat((dir / "config.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(Json::parse(test::read_file(dir / "config.json")) == out.spec.json());
  CHECK(stdfs::exists(dir / "specshim-passwd"));

  // The second create finds its copies mounted: nothing changes and nothing
  // is written, config.json keeps its inode.
  REQUIRE(::stat((dir / "config.json").c_str(), &st) == 0);
  create::Outcome again = modify(bundle);
  CHECK_FALSE(again.changed());
  create::commit(bundle, again);
  struct stat after {};
  REQUIRE(::stat((dir / "config.json").c_str(), &after) == 0);
  CHECK(after.st_ino == st.st_ino);
}

TEST_CASE("create core: a bundle directory names config.json when it cannot be parsed") {
  TempDir dir;
  test::write_file(dir / "config.json", "{\"ociVersion\": ");
  create::BundleDir bundle(dir.path());
  REQUIRE_THROWS_WITH(modify(bundle), Catch::Contains("parse `" + (dir / "config.json").string() + "`"));
}

TEST_CASE("create core: a direct request nested 60,000 deep fails the create cleanly, naming the annotation") {
  TempDir dir;
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  Json spec = {{"ociVersion", "1.1.0"},
               {"process", {{"args", {"sh"}}, {"cwd", "/"}}},
               {"root", {{"path", "rootfs"}}},
               {"annotations", {{"specshim.io/pod", "team-a/trainer"}, {"nvidia.com/gpu", deep}}}};
  test::write_file(dir / "config.json", spec.dump());
  const std::string config =
      "[chain]\norder = [\"device-plugin\"]\n[device-plugin]\nenabled = true\n"
      "kubelet-root = \"" +
      (dir / "kubelet").string() +
      "\"\n[[device-plugin.resources]]\nname = \"nvidia.com/gpu\"\nproviders = [\"direct\"]\n";
  auto doc = config::Document::parse(config, "c.toml");
  auto root = doc.root();
  create::BundleDir bundle(dir.path());
  std::string msg = test::described_error([&] { create::modify(bundle, root, Context{}); });
  CHECK_THAT(msg, Catch::Contains("annotation `nvidia.com/gpu`: nested deeper than 512 levels"));
  CHECK(msg.size() < 1024);
}
