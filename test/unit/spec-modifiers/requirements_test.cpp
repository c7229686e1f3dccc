// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/requirements.h"

#include <catch2/catch.hpp>

#include "requirements/modifier.h"
#include "specshim/base/caps.h"
#include "specshim/base/error.h"
#include "specshim/base/syscalls.h"
#include "specshim/modifiers/registry.h"

using namespace specshim;

namespace {

constexpr const char* kHead = "[[requirements]]\nname = \"vfio\"\nmatch = { devices = [\"/dev/vfio/*\"] }\n";

// load builds the chain from config text, the way create reads its config.
void load(const std::string& text) {
  auto doc = config::Document::parse(text, "c.toml");
  auto root = doc.root();
  build_chain(root);
  root.finish();
}

}  // namespace

TEST_CASE("requirements config errors name the rule and the key") {
  struct Case {
    const char* description;
    std::string text;
    std::string error;
  } cases[] = {
      {"unknown capability", std::string(kHead) + "capabilities = [\"CAP_IPC_LOCK\", \"CAP_BOGUS\"]\n",
       "config `c.toml`: line 4: `requirements[0].capabilities`: rule `vfio`: unknown capability `CAP_BOGUS`"},
      {"bare capability number", std::string(kHead) + "capabilities = [\"14\"]\n",
       "rule `vfio`: capability `14`: must be a CAP_ name"},
      {"unknown syscall", std::string(kHead) + "seccomp-allow = [\"perf_event_open\", \"perf_event_opne\"]\n",
       "config `c.toml`: line 4: `requirements[0].seccomp-allow`: rule `vfio`: unknown syscall `perf_event_opne`"},
      {"second rule is indexed",
       std::string(kHead) + "[[requirements]]\nname = \"rdma\"\nmatch = { resources = [\"rdma/hca\"] }\n"
                            "capabilities = [\"CAP_NET_RAWW\"]\n",
       "line 7: `requirements[1].capabilities`: rule `rdma`: unknown capability `CAP_NET_RAWW`"},
      {"duplicate rule names", std::string(kHead) + kHead, "`requirements[1].name`: rule `vfio` is defined twice"},
      {"typo in a rule key", std::string(kHead) + "capabilites = [\"CAP_IPC_LOCK\"]\n",
       "line 4: unknown key `requirements[0].capabilites`"},
      {"typo in match", "[[requirements]]\nname = \"x\"\nmatch = { device = [\"/dev/x\"] }\n",
       "unknown key `requirements[0].match.device`"},
      {"empty match", "[[requirements]]\nname = \"x\"\nmatch = { devices = [] }\n",
       "`requirements[0].match`: rule `x`: needs at least one of devices, cdi-kinds, resources"},
      {"no match", "[[requirements]]\nname = \"x\"\n", "`requirements[0]`: rule `x`: needs a match table"},
      {"no name", "[[requirements]]\nmatch = { devices = [\"/dev/x\"] }\n",
       "`requirements[0].name`: a rule needs a name"},
      {"relative device glob", "[[requirements]]\nname = \"x\"\nmatch = { devices = [\"vfio/*\"] }\n",
       "rule `x`: `vfio/*` is not an absolute path glob"},
      {"cdi kind without class", "[[requirements]]\nname = \"x\"\nmatch = { cdi-kinds = [\"example.com\"] }\n",
       "rule `x`: `example.com` is not a CDI kind (vendor/class)"},
      {"unknown rlimit", std::string(kHead) + "rlimits = { RLIMIT_MEMLOK = \"unlimited\" }\n",
       "`requirements[0].rlimits.RLIMIT_MEMLOK`: rule `vfio`: RLIMIT_MEMLOK: unknown rlimit type"},
      {"soft above hard", std::string(kHead) + "rlimits = { RLIMIT_MEMLOCK = { soft = 2, hard = 1 } }\n",
       "RLIMIT_MEMLOCK: soft limit is above the hard limit"},
      {"rlimit word", std::string(kHead) + "rlimits = { RLIMIT_MEMLOCK = \"infinity\" }\n",
       "RLIMIT_MEMLOCK: must be a number or \"unlimited\""},
      {"rlimit half pair", std::string(kHead) + "rlimits = { RLIMIT_MEMLOCK = { soft = 1 } }\n",
       "RLIMIT_MEMLOCK: needs hard"},
      {"negative rlimit", std::string(kHead) + "rlimits = { RLIMIT_MEMLOCK = { soft = -1, hard = 1 } }\n",
       "must be between 0 and"},
      {"gid 0", std::string(kHead) + "additional-gids = [44, 0]\n",
       "rule `vfio`: gid 0 would give the container root's group"},
      {"env without =", std::string(kHead) + "env = [\"VFIO\"]\n", "rule `vfio`: `VFIO` is not KEY=VALUE"},
      {"env key twice", std::string(kHead) + "env = [\"A=1\", \"A=2\"]\n", "rule `vfio`: `A` set twice"},
      {"unknown capability set", std::string(kHead) + "capability-sets = [\"effective\", \"ambiant\"]\n",
       "rule `vfio`: unknown set `ambiant`"},
      {"ambient alone", std::string(kHead) + "capability-sets = [\"ambient\", \"effective\"]\n",
       "rule `vfio`: ambient needs permitted and inheritable too"},
      {"a plain table", "[requirements]\nname = \"x\"\n",
       "`requirements`: write each rule as an array table, [[requirements]]"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.description) {
      REQUIRE_THROWS_WITH(load(c.text), Catch::Contains(c.error));
    }
  }
}

TEST_CASE("requirements config reads the issue's example") {
  auto doc = config::Document::parse(R"([[requirements]]
name = "vfio"
match = { devices = ["/dev/vfio/*"], cdi-kinds = ["example.com/accel"], resources = ["example.com/vfio"] }
capabilities = ["cap_ipc_lock"]
rlimits = { RLIMIT_MEMLOCK = "unlimited", RLIMIT_NOFILE = { soft = 65536, hard = "unlimited" } }
seccomp-allow = ["perf_event_open"]
additional-gids = [44]
env = ["VFIO_ENABLED=1"]
)",
                                     "c.toml");
  auto root = doc.root();
  auto view = root.only("requirements");
  auto rules = requirements::read_rules(view);
  view.finish();
  root.finish();
  REQUIRE(rules.size() == 1);
  const auto& r = rules[0];
  CHECK(r.capabilities == std::vector<std::string>{"CAP_IPC_LOCK"});
  CHECK(r.capability_sets == std::vector<std::string>{"bounding", "effective", "permitted"});
  REQUIRE(r.rlimits.size() == 2);
  CHECK(r.rlimits[0].type == "RLIMIT_MEMLOCK");
  CHECK(r.rlimits[0].soft == requirements::kUnlimited);
  CHECK(r.rlimits[1].soft == 65536);
  CHECK(r.rlimits[1].hard == requirements::kUnlimited);
  CHECK(r.additional_gids == std::vector<std::uint32_t>{44});
}

TEST_CASE("config: a [[name]] list reaches its modifier, other root keys stay strict") {
  REQUIRE_NOTHROW(load(std::string(kHead) + "capabilities = [\"CAP_IPC_LOCK\"]\n"));
  REQUIRE_THROWS_WITH(load(std::string(kHead) + "[bogus]\nx = 1\n"), Catch::Contains("unknown key `bogus`"));
  REQUIRE_NOTHROW(load("requirements = []\n"));
}

TEST_CASE("requirements keeps a higher inherited limit when the spec sets none") {
  requirements::Rule rule;
  rule.name = "rdma";
  rule.match.devices = {"/dev/infiniband/*"};
  rule.rlimits = {{"RLIMIT_NOFILE", 65536, 65536}, {"RLIMIT_MEMLOCK", 8192, 8192}};
  requirements::Requirements m({rule}, [](std::string_view type) -> std::pair<std::uint64_t, std::uint64_t> {
    if (type == "RLIMIT_NOFILE") return {1024, 524288};
    return {requirements::kUnlimited, requirements::kUnlimited};
  });
  Spec spec =
      Spec::parse(R"({"process":{"user":{"uid":0,"gid":0}},"linux":{"devices":[{"path":"/dev/infiniband/uverbs0"}]}})");
  Context ctx;
  m.apply(spec, ctx);
  CHECK(spec.json()["process"]["rlimits"] == Json::parse(R"([
    {"type":"RLIMIT_NOFILE","hard":524288,"soft":65536},
    {"type":"RLIMIT_MEMLOCK","hard":18446744073709551615,"soft":18446744073709551615}])"));
}

TEST_CASE("requirements leaves a spec without process alone") {
  requirements::Rule rule;
  rule.name = "x";
  rule.match.devices = {"/dev/x"};
  rule.env = {"A=1"};
  requirements::Requirements m({rule});
  Spec spec = Spec::parse(R"({"linux":{"devices":[{"path":"/dev/x"}]}})");
  Context ctx;
  m.apply(spec, ctx);
  CHECK_FALSE(spec.json().contains("process"));
}

TEST_CASE("syscall names are checked per architecture") {
  CHECK(syscalls::exists_on("open", "SCMP_ARCH_X86_64"));
  CHECK_FALSE(syscalls::exists_on("open", "SCMP_ARCH_AARCH64"));  // only openat there
  CHECK(syscalls::exists_on("socket", "SCMP_ARCH_X86"));          // through socketcall
  CHECK_FALSE(syscalls::exists_on("no_such_call", "SCMP_ARCH_X86_64"));
  REQUIRE_THROWS_WITH(syscalls::exists_on("open", "SCMP_ARCH_VAX"), "unknown seccomp architecture `SCMP_ARCH_VAX`");
  REQUIRE_THROWS_WITH(syscalls::exists_on("open", "x86_64"), "unknown seccomp architecture `x86_64`");
  CHECK(syscalls::common_archs().front() == syscalls::native_arch());
}

TEST_CASE("capability names are canonical and checked against the kernel") {
  CHECK(caps::canonical("cap_ipc_lock") == "CAP_IPC_LOCK");
  CHECK(caps::canonical("Cap_Mknod") == "CAP_MKNOD");
  REQUIRE_THROWS_WITH(caps::canonical("CAP_NOPE"), "unknown capability `CAP_NOPE`");
  REQUIRE_THROWS_WITH(caps::canonical("ipc_lock"), "capability `ipc_lock`: must be a CAP_ name");
  CHECK(caps::kernel_last().rfind("CAP_", 0) == 0);
}
