// SPDX-License-Identifier: Apache-2.0
// Seed 000's platform through specshim and real runc: a non-root inference
// pod on an Ascend node, loading the shipped example config
// (packaging/examples/ascend/config.toml) as it is. The NPU node comes as
// the device plugin hands it over with useAscendDocker=false and containerd
// makes it from the host's: root's, group HwHiAiUser (gid 1000 in the
// example), mode 0660. The stand-in has /dev/null's numbers, which runc's
// default rules allow, so the file mode alone decides who opens it.
#include <catch2/catch.hpp>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using specshim::Json;

namespace {

constexpr const char* kAscendExample = SPECSHIM_TEST_DATA_DIR "/../packaging/examples/ascend/config.toml";
constexpr int kNpuGid = 1000;  // HwHiAiUser in the example

// The probe: the user's name (HCCL's getpwuid), its groups by name, the group
// line, and whether the NPU node opens for writing (as the driver's
// user-space library opens it).
constexpr const char* kProbe =
    "id -un; id -Gn; grep '^HwHiAiUser:' /etc/group || echo no-line; "
    "(: > /dev/davinci0) 2>/dev/null && echo open-ok || echo open-denied";

ProcessResult run_npu_pod(const TempDir& tmp, const std::string& config) {
  BusyboxBundle b(tmp / "bundle");
  b.set_user(10001, 10001);
  b.set_args({"/bin/sh", "-c", kProbe});
  b.spec()["linux"]["devices"] = Json::array({Json{{"path", "/dev/davinci0"},
                                                   {"type", "c"},
                                                   {"major", 1},
                                                   {"minor", 3},
                                                   {"fileMode", 0660},
                                                   {"uid", 0},
                                                   {"gid", kNpuGid}}});
  b.save();
  Shim shim(tmp.path(), config);
  auto r = shim.run(b, unique_id("it-ascend"));
  INFO(r.err << Shim::log(b));
  REQUIRE(r.exit_code == 0);
  return r;
}

}  // namespace

TEST_CASE("ascend: with the shipped example, uid 10001 resolves and opens its 0660 HwHiAiUser NPU node") {
  TempDir tmp;
  auto r = run_npu_pod(tmp, read_file(kAscendExample));
  CHECK(r.out == "user10001\ngroup10001 HwHiAiUser\nHwHiAiUser:x:1000:user10001\nopen-ok\n");
}

TEST_CASE("ascend: without the group requirement the same pod resolves but cannot open the node") {
  TempDir tmp;
  auto r = run_npu_pod(tmp, "");  // the defaults: passwd on, no [[requirements]]
  CHECK(r.out == "user10001\ngroup10001\nno-line\nopen-denied\n");
}
