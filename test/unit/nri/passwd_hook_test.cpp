// SPDX-License-Identifier: Apache-2.0
// specshim-nri's passwd copies ([nri] passwd-hook): what CreateContainer
// adds to the adjustment and makes on disk (nri/src/passwd_hook.h). The hook
// that fills the copies runs in test/integration/nri_hook_test.cpp; what it
// writes (specshim/modifiers/passwd_copies.h) is checked here too.
#include "passwd_hook.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "specshim/modifiers/passwd_copies.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using specshim::Json;
using specshim::NriSettings;
using specshim::Spec;
namespace api = specshim::nri::api;

namespace {

Spec view_with_mounts(const Json& mounts) {
  return Spec::parse(Json{{"mounts", mounts}}.dump());
}

}  // namespace

TEST_CASE("nri passwd copies: two empty read-only copies mounted and a createRuntime hook") {
  specshim::test::TempDir tmp;
  NriSettings nri;
  nri.state_dir = (tmp.path() / "state").string();
  nri.hook_binary = "/opt/specshim/bin/specshim";
  const fs::path dir = tmp.path() / "state" / "c1";
  api::ContainerAdjustment adj;
  REQUIRE(specshim::nri::add_passwd_copies(view_with_mounts(Json::array({{{"destination", "/etc/hosts"}}})), dir, nri,
                                           "/etc/specshim/config.toml", adj));

  for (const char* name : {"specshim-passwd", "specshim-group"}) {
    struct stat st {};
    REQUIRE(::stat((dir / name).c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK((st.st_mode & 07777) == 0644);
    CHECK(st.st_size == 0);
  }
  struct stat dst {};
  REQUIRE(::stat(dir.c_str(), &dst) == 0);
  CHECK((dst.st_mode & 07777) == 0700);

  REQUIRE(adj.mounts_size() == 2);
  CHECK(adj.mounts(0).destination() == "/etc/passwd");
  CHECK(adj.mounts(0).source() == (dir / "specshim-passwd").string());
  CHECK(adj.mounts(1).destination() == "/etc/group");
  CHECK(adj.mounts(1).source() == (dir / "specshim-group").string());
  for (const auto& m : adj.mounts()) {
    CHECK(m.type() == "bind");
    CHECK(std::vector<std::string>(m.options().begin(), m.options().end()) ==
          std::vector<std::string>{"rbind", "ro", "nosuid", "nodev", "noexec", "rprivate"});
  }
  REQUIRE(adj.hooks().create_runtime_size() == 1);
  const api::Hook& hook = adj.hooks().create_runtime(0);
  CHECK(hook.path() == "/opt/specshim/bin/specshim");
  CHECK(std::vector<std::string>(hook.args().begin(), hook.args().end()) ==
        std::vector<std::string>{"specshim", "nri-hook", "--state-dir", nri.state_dir, "--config",
                                 "/etc/specshim/config.toml"});
  CHECK(adj.hooks().prestart_size() + adj.hooks().create_container_size() + adj.hooks().poststart_size() == 0);
}

TEST_CASE("nri passwd copies: a pod's own mount over the databases stays and no copy is made") {
  specshim::test::TempDir tmp;
  NriSettings nri;
  nri.state_dir = (tmp.path() / "state").string();
  const fs::path dir = tmp.path() / "state" / "c1";
  for (const char* destination : {"/etc/passwd", "/etc/group", "/etc", "/etc/", "/", "etc"}) {
    INFO(destination);
    api::ContainerAdjustment adj;
    CHECK_FALSE(specshim::nri::add_passwd_copies(view_with_mounts(Json::array({{{"destination", destination}}})), dir,
                                                 nri, "/c.toml", adj));
    CHECK(adj.ByteSizeLong() == 0);
    CHECK_FALSE(fs::exists(dir));
  }
  // A sibling path is not a parent.
  api::ContainerAdjustment adj;
  CHECK(specshim::nri::add_passwd_copies(view_with_mounts(Json::array({{{"destination", "/etc/passwd.d"}}})), dir, nri,
                                         "/c.toml", adj));
}

TEST_CASE("nri passwd copies: a directory found with another mode is left 0700") {
  specshim::test::TempDir tmp;
  NriSettings nri;
  nri.state_dir = (tmp.path() / "state").string();
  const fs::path dir = tmp.path() / "state" / "c1";
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms(0755));
  api::ContainerAdjustment adj;
  REQUIRE(specshim::nri::add_passwd_copies(view_with_mounts(Json::array()), dir, nri, "/c.toml", adj));
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
}

TEST_CASE("nri passwd copies: the image's own files fill root's 0644 copies, never with the image's mode or owner") {
  if (::geteuid() != 0) {
    WARN("needs root: the copies are chowned");
    return;
  }
  specshim::test::TempDir tmp;
  NriSettings nri;
  nri.state_dir = (tmp.path() / "state").string();
  const fs::path dir = tmp.path() / "state" / "c1";
  const fs::path bundle = tmp.path() / "bundle";
  // A setuid, setgid, world-writable /etc/passwd and a private /etc/group,
  // neither root's: uid 0 is left alone by the modifier, so the copies hold
  // these files' content.
  const std::string passwd = "root:x:0:0:root:/root:/bin/sh\nx:x:4242:4242::/:/bin/sh\n";
  specshim::test::write_file(bundle / "rootfs/etc/passwd", passwd);
  specshim::test::write_file(bundle / "rootfs/etc/group", "root:x:0:\n");
  REQUIRE(::chown((bundle / "rootfs/etc/passwd").c_str(), 4242, 4242) == 0);
  REQUIRE(::chmod((bundle / "rootfs/etc/passwd").c_str(), 06777) == 0);
  REQUIRE(::chown((bundle / "rootfs/etc/group").c_str(), 4243, 4243) == 0);
  REQUIRE(::chmod((bundle / "rootfs/etc/group").c_str(), 0600) == 0);

  Json mounts = Json::array();
  api::ContainerAdjustment adj;
  REQUIRE(specshim::nri::add_passwd_copies(view_with_mounts(mounts), dir, nri, "/c.toml", adj));
  for (const auto& m : adj.mounts())
    mounts.push_back({{"destination", m.destination()}, {"type", "bind"}, {"source", m.source()}});
  // A copy someone left with a mode of its own gets kCopyMode back too.
  REQUIRE(::chown((dir / "specshim-group").c_str(), 4242, 4242) == 0);
  REQUIRE(::chmod((dir / "specshim-group").c_str(), 04755) == 0);
  Spec spec = Spec::parse(Json{
      {"ociVersion", "1.1.0"},
      {"process", {{"user", {{"uid", 0}, {"gid", 0}}}, {"args", {"sh"}}, {"cwd", "/"}}},
      {"root", {{"path", "rootfs"}}},
      {"mounts", mounts}}.dump());
  auto doc = specshim::config::Document::parse("", "c.toml");
  auto root = doc.root();
  auto table = root.section("passwd");
  specshim::passwd::fill_copies(table, "", spec, bundle, dir);

  CHECK(specshim::test::read_file(dir / "specshim-passwd") == passwd);
  CHECK(specshim::test::read_file(dir / "specshim-group") == "root:x:0:\n");
  for (const char* name : {"specshim-passwd", "specshim-group"}) {
    INFO(name);
    struct stat st {};
    REQUIRE(::stat((dir / name).c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0644);
    CHECK(st.st_uid == 0);
    CHECK(st.st_gid == 0);
  }
  struct stat dst {};
  REQUIRE(::stat(dir.c_str(), &dst) == 0);
  CHECK((dst.st_mode & 07777) == 0700);
}
