// SPDX-License-Identifier: Apache-2.0
// The patches modifier through specshim and real runc: a patch's mount and
// env as the container sees them.
#include <catch2/catch.hpp>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using specshim::Json;

namespace {

// The busybox bundle has no CRI annotations, like a container created outside
// CRI: container-kind "container" matches it.
std::string config(const fs::path& preload) {
  return R"([[patches]]
name = "vgpu-preload"
match = { annotations = { "example.com/vgpu" = "*" }, container-kind = "container" }
ops = [{ op = "add", path = "/process/env/-", value = "VGPU_SHARED=1" }]
set-mounts = [
  { destination = "/etc/ld.so.preload", type = "bind", source = ")" +
         preload.string() + R"(", options = ["ro", "rbind"] },
]
)";
}

// run_probe prints the preload file (or "none") and the patch's env.
ProcessResult run_probe(const TempDir& tmp, const Json& annotations, Json* spec_after = nullptr) {
  write_file(tmp / "preload", "/usr/local/vgpu/libvgpu.so\n");
  BusyboxBundle b(tmp / "bundle");
  b.set_args({"/bin/sh", "-c", "cat /etc/ld.so.preload 2>/dev/null || echo none; echo \"vgpu=${VGPU_SHARED:-unset}\""});
  b.spec()["annotations"] = annotations;
  b.save();
  Shim shim(tmp.path(), config(tmp / "preload"));
  auto r = shim.run(b, unique_id("it-patches"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  if (spec_after) *spec_after = Json::parse(read_file(b.dir() / "config.json"));
  return r;
}

}  // namespace

TEST_CASE("patches: a matched container sees the patch's mount and env, and the spec records the patch") {
  TempDir tmp;
  Json spec;
  auto r = run_probe(tmp, Json{{"example.com/vgpu", "shared"}}, &spec);
  REQUIRE(r.out == "/usr/local/vgpu/libvgpu.so\nvgpu=1\n");
  REQUIRE(spec["annotations"]["specshim.io/patches"] == "vgpu-preload");
}

TEST_CASE("patches: a container without the annotation is left alone") {
  TempDir tmp;
  auto r = run_probe(tmp, Json::object());
  REQUIRE(r.out == "none\nvgpu=unset\n");
}
