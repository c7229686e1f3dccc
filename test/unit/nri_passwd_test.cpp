// SPDX-License-Identifier: Apache-2.0
// specshim-nri's passwd copies ([nri] passwd-hook): what CreateContainer
// adds to the adjustment and makes on disk (nri/src/passwd_hook.h). The hook
// that fills the copies runs in test/integration/nri_hook_test.cpp.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "passwd_hook.h"
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
  CHECK((dst.st_mode & 07777) == 0711);

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
