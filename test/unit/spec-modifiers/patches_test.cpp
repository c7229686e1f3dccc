// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/patches.h"

#include <catch2/catch.hpp>

#include "patches/modifier.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/chain.h"
#include "specshim/modifiers/chain_facts.h"
#include "specshim/modifiers/config_file.h"
#include "specshim/modifiers/factories.h"
#include "specshim/modifiers/registry.h"

using namespace specshim;

namespace {

constexpr const char* kSpec = R"({
  "ociVersion": "1.0.2",
  "process": {"user": {"uid": 0, "gid": 0}, "args": ["sh"], "env": ["PATH=/bin"]},
  "root": {"path": "rootfs"},
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/etc/hosts", "type": "bind", "source": "/var/lib/pod/hosts", "options": ["rbind", "rw"]},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"}
  ],
  "annotations": {"io.kubernetes.cri.container-type": "container", "example.com/vgpu": "2"},
  "linux": {"sysctl": {"net.ipv4.ip_forward": "1"}}
}
)";

// build loads config text the way create does and returns the chain.
Chain build(const std::string& text) {
  auto doc = config::Document::parse(text, "c.toml");
  auto root = doc.root();
  Chain chain = build_chain(root);
  root.finish();
  return chain;
}

std::vector<patches::Patch> read(const std::string& text) {
  auto doc = config::Document::parse(text, "c.toml");
  auto root = doc.root();
  auto view = root.only("patches");
  auto list = patches::read_patches(view, "");
  view.finish();
  root.finish();
  return list;
}

// patch applies the [[patches]] in text to spec_text once, as the chain's first pass.
Spec patch(const std::string& text, const std::string& spec_text = kSpec) {
  patches::Patches m(read(text));
  Spec s = Spec::parse(spec_text);
  Context ctx;
  ctx.pass = 1;
  m.apply(s, ctx);
  return s;
}

std::string one(const std::string& ops) {
  return "[[patches]]\nname = \"p\"\nops = [\n" + ops + "\n]\n";
}

// failure returns describe() of what patch(text, spec_text) throws.
std::string failure(const std::string& text, const std::string& spec_text = kSpec) {
  try {
    patch(text, spec_text);
  } catch (const std::exception& e) {
    return describe(e);
  }
  FAIL("no error");
  return {};
}

const Json& at(const Spec& s, const char* pointer) {
  return s.json().at(Json::json_pointer(pointer));
}

}  // namespace

TEST_CASE("patches config errors name the patch, the op and the line") {
  struct Case {
    const char* description;
    std::string text;
    std::string error;
  } cases[] = {
      {"unknown op", one("  { op = \"add\", path = \"/a\", value = 1 },\n  { op = \"ad\", path = \"/b\" },"),
       "config `c.toml`: line 5: `patches[0].ops[1].op`: patch `p` ops[1]: unknown op `ad` (add, remove, replace, "
       "move, copy, test)"},
      {"missing op", one("  { path = \"/a\" },"),
       "config `c.toml`: line 4: `patches[0].ops[0]`: patch `p` ops[0]: needs op"},
      {"missing path", one("  { op = \"remove\" },"),
       "line 4: `patches[0].ops[0]`: patch `p` ops[0] (remove): needs path"},
      {"missing value", one("  { op = \"add\", path = \"/a\" },"),
       "line 4: `patches[0].ops[0]`: patch `p` ops[0] (add /a): needs value"},
      {"value on remove", one("  { op = \"remove\", path = \"/a\", value = 1 },"),
       "`patches[0].ops[0].value`: patch `p` ops[0] (remove /a): takes no value"},
      {"missing from", one("  { op = \"move\", path = \"/a\" },"), "patch `p` ops[0] (move): needs from"},
      {"value-json on remove", one("  { op = \"remove\", path = \"/a\", value-json = \"1\" },"),
       "`patches[0].ops[0].value-json`: patch `p` ops[0] (remove /a): takes no value"},
      {"value and value-json", one("  { op = \"add\", path = \"/a\", value = 1, value-json = \"1\" },"),
       "`patches[0].ops[0].value-json`: patch `p` ops[0] (add /a): give value or value-json, not both"},
      {"bad value-json", one("  { op = \"add\", path = \"/a\", value-json = '{\"a\": }' },"),
       "line 4: `patches[0].ops[0].value-json`: patch `p` ops[0] (add /a): parse error at line 1, column 7: syntax "
       "error while parsing value"},
      {"deep value-json",
       one("  { op = \"add\", path = \"/a\", value-json = '" + std::string(513, '[') + std::string(513, ']') + "' },"),
       "line 4: `patches[0].ops[0].value-json`: patch `p` ops[0] (add /a): nested deeper than 512 levels"},
      {"from on add", one("  { op = \"add\", path = \"/a\", from = \"/b\", value = 1 },"),
       "`patches[0].ops[0].from`: patch `p` ops[0] (add): takes no from"},
      {"relative pointer", one("  { op = \"remove\", path = \"linux/sysctl\" },"),
       "`patches[0].ops[0].path`: patch `p` ops[0] (remove): `linux/sysctl` is not a JSON pointer"},
      {"bad escape", one("  { op = \"remove\", path = \"/a~2b\" },"), "`/a~2b` is not a JSON pointer"},
      {"bad from pointer", one("  { op = \"copy\", from = \"a\", path = \"/b\" },"),
       "`patches[0].ops[0].from`: patch `p` ops[0] (copy): `a` is not a JSON pointer"},
      {"dash on remove", one("  { op = \"remove\", path = \"/process/env/-\" },"),
       "patch `p` ops[0] (remove /process/env/-): `-` (past the end of an array) is only a target for add"},
      {"remove everything", one("  { op = \"remove\", path = \"\" },"),
       "patch `p` ops[0] (remove \"\"): cannot remove the whole spec"},
      {"typo in an op", one("  { op = \"remove\", path = \"/a\", form = \"/b\" },"),
       "line 4: unknown key `patches[0].ops[0].form`"},
      {"move into itself", one("  { op = \"move\", from = \"/linux\", path = \"/linux/x\" },"),
       "patch `p` ops[0] (move /linux -> /linux/x): cannot move a value into itself"},
      {"date value", one("  { op = \"add\", path = \"/a\", value = 1979-05-27 },"),
       "`patches[0].ops[0].value`: dates and times have no JSON form"},
      {"nan value", one("  { op = \"add\", path = \"/a\", value = [1.0, nan] },"),
       "`patches[0].ops[0].value`: inf and nan have no JSON form"},
      {"root path", one("  { op = \"replace\", path = \"/root/path\", value = \"/\" },"),
       "line 4: `patches[0].ops[0].path`: patch `p` ops[0] (replace /root/path): changes `/root/path`, the "
       "container's root filesystem; set allow-sensitive = true on the patch if that is meant"},
      {"under process.user", one("  { op = \"replace\", path = \"/process/user/uid\", value = 0 },"),
       "changes `/process/user`, the user every matched container runs as"},
      {"ancestor of process.user", one("  { op = \"add\", path = \"/process\", value = {} },"),
       "ops[0] (add /process): changes `/process/user`"},
      {"the whole spec", one("  { op = \"replace\", path = \"\", value = {} },"),
       "ops[0] (replace \"\"): changes `/root/path`"},
      {"move out of root", one("  { op = \"move\", from = \"/root\", path = \"/x\" },"),
       "`patches[0].ops[0].from`: patch `p` ops[0] (move /root -> /x): changes `/root/path`"},
      {"duplicate name", one("  { op = \"remove\", path = \"/a\" },") + one("  { op = \"remove\", path = \"/b\" },"),
       "line 7: `patches[1].name`: patch `p` is defined twice"},
      {"no name", "[[patches]]\nops = [{ op = \"remove\", path = \"/a\" }]\n",
       "`patches[0].name`: a patch needs a name"},
      {"comma in name", "[[patches]]\nname = \"a,b\"\nops = [{ op = \"remove\", path = \"/a\" }]\n",
       "`patches[0].name`: a patch needs a name of letters"},
      {"nothing to do", "[[patches]]\nname = \"p\"\n", "`patches[0]`: patch `p`: needs ops or set-mounts"},
      {"typo in a patch key", one("") + "set-mount = []\n", "line 6: unknown key `patches[0].set-mount`"},
      {"typo in match", one("  { op = \"remove\", path = \"/a\" },") + "match = { annotation = {} }\n",
       "unknown key `patches[0].match.annotation`"},
      {"unterminated bracket",
       one("  { op = \"remove\", path = \"/a\" },") + "match = { annotations = { x = \"[ab\" } }\n",
       "line 6: `patches[0].match.annotations.x`: patch `p`: `[ab` is not a glob"},
      {"glob not a string", one("  { op = \"remove\", path = \"/a\" },") + "match = { annotations = { x = 1 } }\n",
       "`patches[0].match.annotations.x`: must be a string"},
      {"unknown kind", one("  { op = \"remove\", path = \"/a\" },") + "match = { container-kind = \"pod\" }\n",
       "`patches[0].match.container-kind`: patch `p`: `pod` is not container or sandbox"},
      {"relative mount", "[[patches]]\nname = \"m\"\nset-mounts = [{ destination = \"etc/hosts\", source = \"/x\" }]\n",
       "line 3: `patches[0].set-mounts[0].destination`: patch `m` set-mounts[0]: `etc/hosts` is not an absolute path"},
      {"mount without source", "[[patches]]\nname = \"m\"\nset-mounts = [{ destination = \"/etc/hosts\" }]\n",
       "`patches[0].set-mounts[0]`: patch `m` set-mounts[0]: needs a source"},
      {"mount set twice",
       "[[patches]]\nname = \"m\"\nset-mounts = [{ destination = \"/etc/hosts\", source = \"/a\" },\n"
       "  { destination = \"/etc//hosts/\", source = \"/b\" }]\n",
       "line 4: `patches[0].set-mounts[1].destination`: patch `m` set-mounts[1]: destination set twice in this patch"},
      {"a plain table", "[patches]\nname = \"x\"\n", "`patches`: write each patch as an array table, [[patches]]"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.description) {
      REQUIRE_THROWS_WITH(build(c.text), Catch::Contains(c.error));
    }
  }
}

TEST_CASE("patches: allow-sensitive lets a patch touch root.path and process.user, reads never need it") {
  REQUIRE_NOTHROW(
      build(one("  { op = \"replace\", path = \"/process/user/uid\", value = 1000 },") + "allow-sensitive = true\n"));
  REQUIRE_NOTHROW(
      build(one("  { op = \"test\", path = \"/process/user/uid\", value = 0 },\n"
                "  { op = \"copy\", from = \"/root/path\", path = \"/annotations/x\" },")));
  REQUIRE_NOTHROW(build(one("  { op = \"add\", path = \"/root/readonly\", value = true },")));
}

TEST_CASE("patches: values are any TOML value, converted to JSON in file order") {
  auto list =
      read(one("  { op = \"add\", path = \"/x\", value = { b = 1, a = [true, 1.5, -2, \"s\"], "
               "c = { z = 0, y = {} } } },"));
  REQUIRE(list.size() == 1);
  const Json& v = list[0].ops[0].op["value"];
  CHECK(v.dump() == R"({"b":1,"a":[true,1.5,-2,"s"],"c":{"z":0,"y":{}}})");
  // A non-negative integer is unsigned, as a spec read from JSON holds it
  // (requirements reads rlimits with is_number_unsigned).
  CHECK(v["b"].is_number_unsigned());
  CHECK(v["a"][2].is_number_integer());
  CHECK(list[0].ops[0].label == "ops[0] (add /x)");
}

TEST_CASE("patches: value-json says what TOML cannot, such as RLIM_INFINITY") {
  auto list =
      read(one("  { op = \"add\", path = \"/x\", value-json = '{\"hard\": 18446744073709551615, \"n\": 1.50}' },"));
  const Json& v = list[0].ops[0].op["value"];
  CHECK(v["hard"].get<std::uint64_t>() == ~std::uint64_t{0});
  CHECK(v.dump() == R"({"hard":18446744073709551615,"n":1.5})");
}

TEST_CASE("patches: globs are checked as fnmatch reads them") {
  for (const char* good : {"*", "a?c", "[ab]*", "[!ab]", "[]a]", "[[:digit:]]*", "a\\[", "[^a]b"}) {
    INFO(good);
    CHECK(specshim::valid_glob(good));
  }
  for (const char* bad : {"x[", "[ab", "a\\", "[[:digit:]", "[]", "a\nb"}) {
    INFO(bad);
    CHECK_FALSE(specshim::valid_glob(bad));
  }
}

TEST_CASE("patches: match needs every condition, no match is every container") {
  auto with = [](const std::string& match) {
    return "[[patches]]\nname = \"p\"\nmatch = " + match + "\nops = [{ op = \"add\", path = \"/x\", value = 1 }]\n";
  };
  auto applied = [](const Spec& s) { return s.json().contains("x"); };
  CHECK(applied(patch(with("{}"))));
  CHECK(applied(patch(with("{ annotations = { \"example.com/vgpu\" = \"*\" } }"))));
  CHECK(applied(patch(with("{ annotations = { \"example.com/vgpu\" = \"[0-9]\" }, container-kind = \"container\" }"))));
  CHECK_FALSE(applied(patch(with("{ annotations = { \"example.com/vgpu\" = \"[3-9]\" } }"))));
  CHECK_FALSE(applied(patch(with("{ annotations = { \"example.com/other\" = \"*\" } }"))));
  CHECK_FALSE(applied(patch(with("{ annotations = { \"example.com/vgpu\" = \"*\" }, container-kind = \"sandbox\" }"))));

  std::string sandbox = R"({"annotations": {"io.kubernetes.cri.container-type": "sandbox"}})";
  std::string crio = R"({"annotations": {"io.kubernetes.cri-o.ContainerType": "sandbox"}})";
  std::string plain = R"({"annotations": {}})";
  CHECK(applied(patch(with("{ container-kind = \"sandbox\" }"), sandbox)));
  CHECK(applied(patch(with("{ container-kind = \"sandbox\" }"), crio)));
  CHECK_FALSE(applied(patch(with("{ container-kind = \"container\" }"), sandbox)));
  // Outside CRI (ctr, docker-in-docker siblings) there is no kind annotation: not a sandbox.
  CHECK(applied(patch(with("{ container-kind = \"container\" }"), plain)));
  CHECK_FALSE(applied(patch(with("{ container-kind = \"sandbox\" }"), plain)));
  CHECK(applied(patch(with("{}"), sandbox)));
}

TEST_CASE("patches: match.namespaces reads CRI's pod namespace, match.uids process.user.uid") {
  auto with = [](const std::string& match) {
    return "[[patches]]\nname = \"p\"\nmatch = " + match + "\nops = [{ op = \"add\", path = \"/x\", value = 1 }]\n";
  };
  auto applied = [](const Spec& s) { return s.json().contains("x"); };
  auto spec = [](const std::string& annotations, const std::string& user) {
    return R"({"process": {"user": )" + user + R"(}, "annotations": )" + annotations + "}";
  };
  std::string containerd =
      R"({"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-namespace": "ml-a"})";
  std::string crio = R"({"io.kubernetes.cri-o.ContainerType": "container", "io.kubernetes.pod.namespace": "ml-a"})";
  // Outside CRI the namespace annotation is anyone's to write: it is not read.
  std::string sibling = R"({"io.kubernetes.cri.sandbox-namespace": "ml-a"})";
  std::string u1000 = R"({"uid": 1000, "gid": 1000})";
  CHECK(applied(patch(with(R"({ namespaces = ["ml-*"] })"), spec(containerd, u1000))));
  CHECK(applied(patch(with(R"({ namespaces = ["x", "ml-a"] })"), spec(crio, u1000))));
  CHECK_FALSE(applied(patch(with(R"({ namespaces = ["ml-b"] })"), spec(containerd, u1000))));
  CHECK_FALSE(applied(patch(with(R"({ namespaces = ["*"] })"), spec(sibling, u1000))));
  CHECK(applied(patch(with(R"({ uids = ["1000"] })"), spec(sibling, u1000))));
  CHECK(applied(patch(with(R"({ uids = ["1-999", "1000-1999"] })"), spec(sibling, u1000))));
  CHECK_FALSE(applied(patch(with(R"({ uids = ["1001-1999"] })"), spec(sibling, u1000))));
  CHECK(applied(patch(with(R"({ uids = ["0"] })"), spec(sibling, "{}"))));  // no uid is runc's 0
  CHECK_FALSE(applied(patch(with(R"({ uids = ["0-4294967295"] })"), spec(sibling, R"({"uid": -1})"))));
  CHECK_FALSE(applied(patch(with(R"({ namespaces = ["ml-*"], uids = ["0"] })"), spec(containerd, u1000))));

  CHECK_THAT(failure(with(R"({ uids = ["1000-"] })")), Catch::Contains("patch `p`: `1000-` is not a uid or a range"));
  CHECK_THAT(failure(with(R"({ uids = [] })")), Catch::Contains("an empty list matches no container"));
  CHECK_THAT(failure(with(R"({ namespaces = ["ml-["] })")), Catch::Contains("`ml-[` is not a namespace glob"));
  patches::Patches scoped(read(with(R"({ namespaces = ["ml-*"], uids = ["1000-1999", "7"] })")));
  CHECK(scoped.patches()[0].match.describe() == "namespaces ml-*; uids 1000-1999, 7");
  CHECK(ContainerMatch{}.describe() == "every container");
}

TEST_CASE("patches: each RFC 6902 op, in order") {
  Spec s = patch(one(R"(  { op = "add", path = "/process/env/-", value = "VGPU_SHARED=1" },
  { op = "add", path = "/process/env/0", value = "FIRST=1" },
  { op = "add", path = "/linux/sysctl/net.core.somaxconn", value = "4096" },
  { op = "replace", path = "/linux/sysctl/net.ipv4.ip_forward", value = "0" },
  { op = "copy", from = "/process/env/0", path = "/annotations/first" },
  { op = "move", from = "/annotations/example.com~1vgpu", path = "/annotations/moved" },
  { op = "remove", path = "/mounts/0" },
  { op = "test", path = "/ociVersion", value = "1.0.2" },)"));
  CHECK(at(s, "/process/env") == Json::parse(R"(["FIRST=1", "PATH=/bin", "VGPU_SHARED=1"])"));
  CHECK(at(s, "/linux/sysctl").dump() == R"({"net.ipv4.ip_forward":"0","net.core.somaxconn":"4096"})");
  CHECK(at(s, "/annotations/first") == "FIRST=1");
  CHECK_FALSE(at(s, "/annotations").contains("example.com/vgpu"));
  CHECK(at(s, "/annotations/moved") == "2");
  CHECK(at(s, "/mounts/0/destination") == "/etc/hosts");
  CHECK(at(s, "/annotations/specshim.io~1patches") == "p");
  // Keys keep their places: a replaced value stays where it was, an added one comes last.
  CHECK(s.json().begin().key() == "ociVersion");
}

TEST_CASE("patches: an op that cannot apply names the patch and op, and changes nothing") {
  struct Case {
    const char* description;
    std::string ops;
    std::string error;
  } cases[] = {
      {"remove of a missing key", "{ op = \"remove\", path = \"/linux/sysctl/x\" }",
       "patch `p` ops[1] (remove /linux/sysctl/x): path not found"},
      {"remove past the end", "{ op = \"remove\", path = \"/mounts/3\" }",
       "patch `p` ops[1] (remove /mounts/3): path not found"},
      {"failing test", "{ op = \"test\", path = \"/process/args\", value = [\"bash\"] }",
       "patch `p` ops[1] (test /process/args): test failed: the value is [\"sh\"], not [\"bash\"]"},
      {"test of a missing path", "{ op = \"test\", path = \"/x\", value = 1 }", "ops[1] (test /x): path not found"},
      {"replace of a missing key", "{ op = \"replace\", path = \"/hostname\", value = \"h\" }",
       "ops[1] (replace /hostname): path not found"},
      {"add without a parent", "{ op = \"add\", path = \"/linux/seccomp/defaultAction\", value = \"x\" }",
       "ops[1] (add /linux/seccomp/defaultAction): parent `/linux/seccomp` not found"},
      {"add into a string", "{ op = \"add\", path = \"/ociVersion/x\", value = 1 }",
       "parent `/ociVersion` is a string, not an object or array"},
      {"add past the end", "{ op = \"add\", path = \"/mounts/9\", value = {} }",
       "ops[1] (add /mounts/9): `9` is not an index of `/mounts` (0 to 3, or - for the end)"},
      {"add at a word index", "{ op = \"add\", path = \"/mounts/x\", value = {} }",
       "ops[1] (add /mounts/x): `x` is not an index of `/mounts` (0 to 3, or - for the end)"},
      {"add at a leading zero", "{ op = \"add\", path = \"/mounts/01\", value = {} }",
       "`01` is not an index of `/mounts`"},
      {"remove at an index beyond size_t", "{ op = \"remove\", path = \"/mounts/99999999999999999999999\" }",
       "ops[1] (remove /mounts/99999999999999999999999): "},
      {"add at an index beyond size_t", "{ op = \"add\", path = \"/mounts/99999999999999999999999\", value = 1 }",
       "`99999999999999999999999` is not an index of `/mounts`"},
      {"move from nowhere", "{ op = \"move\", from = \"/nope\", path = \"/x\" }",
       "ops[1] (move /nope -> /x): `from` path not found"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.description) {
      auto chain = build(one("  { op = \"add\", path = \"/process/env/-\", value = \"A=1\" },\n  " + c.ops + ","));
      Spec s = Spec::parse(kSpec);
      Json before = s.json();
      Context ctx;
      try {
        chain.run(s, ctx);
        FAIL("no error");
      } catch (const std::exception& e) {
        CHECK_THAT(describe(e), Catch::StartsWith("patches: ") && Catch::Contains(c.error));
      }
      CHECK(s.json() == before);  // the first op did not stay behind
    }
  }
}

TEST_CASE("patches: create-parents makes missing objects on the way, never array elements") {
  std::string op =
      "  { op = \"add\", path = \"/linux/seccomp/x/defaultAction\", value = \"A\", create-parents = true },";
  CHECK(at(patch(one(op)), "/linux/seccomp").dump() == R"({"x":{"defaultAction":"A"}})");
  CHECK(at(patch(one(op), R"({"linux": {"seccomp": null}})"), "/linux/seccomp").dump() ==
        R"({"x":{"defaultAction":"A"}})");
  // An existing object is kept; the value joins it.
  CHECK(at(patch(one("  { op = \"add\", path = \"/linux/sysctl/b\", value = \"2\", create-parents = true },")),
           "/linux/sysctl")
            .dump() == R"({"net.ipv4.ip_forward":"1","b":"2"})");
  CHECK_THAT(failure(one("  { op = \"add\", path = \"/mounts/7/options\", value = [], create-parents = true },")),
             Catch::Contains("ops[0] (add /mounts/7/options): parent `/mounts/7` not found"));
  CHECK_THAT(failure(one("  { op = \"add\", path = \"/ociVersion/a/b\", value = 1, create-parents = true },")),
             Catch::Contains("parent `/ociVersion/a` not found"));
  REQUIRE_THROWS_WITH(build(one("  { op = \"replace\", path = \"/a\", value = 1, create-parents = true },")),
                      Catch::Contains("`patches[0].ops[0].create-parents`: patch `p` ops[0] (replace /a): only add "
                                      "takes create-parents"));
}

TEST_CASE("patches: a failed test quotes at most 80 bytes of each value, whole UTF-8 characters") {
  // Byte 77 of the dump is inside the first é: the cut moves before it.
  std::string long_value = std::string(75, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9";
  std::string spec = R"({"x": ")" + long_value + R"("})";
  std::string msg = failure(one("  { op = \"test\", path = \"/x\", value = \"b\" },"), spec);
  CHECK(msg == "patch `p` ops[0] (test /x): test failed: the value is \"" + std::string(75, 'a') + "..., not \"b\"");
}

TEST_CASE("patches: set-mounts replaces the mount at a destination in place, or appends") {
  Spec s = patch(R"([[patches]]
name = "m"
set-mounts = [
  { destination = "/etc/hosts/", type = "bind", source = "/etc/dind-hosts", options = ["ro", "rbind"] },
  { destination = "/etc/ld.so.preload", type = "bind", source = "/usr/local/vgpu/ld.so.preload", options = ["ro"] },
]
)");
  const Json& mounts = at(s, "/mounts");
  REQUIRE(mounts.size() == 4);
  CHECK(mounts[0]["destination"] == "/proc");
  CHECK(mounts[1].dump() ==
        R"({"destination":"/etc/hosts/","type":"bind","source":"/etc/dind-hosts","options":["ro","rbind"]})");
  CHECK(mounts[2]["destination"] == "/dev");
  CHECK(mounts[3]["source"] == "/usr/local/vgpu/ld.so.preload");

  // A later mount at the same destination would hide the patch's: it goes.
  std::string twice =
      R"({"mounts": [{"destination": "/etc/hosts", "source": "/a"}, {"destination": "/x", "source": "/x"},
    {"destination": "/etc//hosts", "source": "/b"}]})";
  Spec t =
      patch("[[patches]]\nname = \"m\"\nset-mounts = [{ destination = \"/etc/hosts\", source = \"/c\" }]\n", twice);
  CHECK(at(t, "/mounts").dump() ==
        R"([{"destination":"/etc/hosts","source":"/c"},{"destination":"/x","source":"/x"}])");

  Spec none = patch("[[patches]]\nname = \"m\"\nset-mounts = [{ destination = \"/etc/hosts\", source = \"/c\" }]\n",
                    R"({"ociVersion": "1.0.2"})");
  CHECK(at(none, "/mounts").dump() == R"([{"destination":"/etc/hosts","source":"/c"}])");
  CHECK(failure("[[patches]]\nname = \"m\"\nset-mounts = [{ destination = \"/h\", source = \"/c\" }]\n",
                R"({"mounts": {}})") == "patch `m` set-mounts[0] (/h): spec field `mounts` is not an array");
}

TEST_CASE("patches: applied once and recorded, across passes and later creates") {
  std::string config = one("  { op = \"add\", path = \"/process/env/-\", value = \"VGPU_SHARED=1\" },") +
                       "[[patches]]\nname = \"q\"\nmatch = { annotations = { late = \"*\" } }\n"
                       "ops = [{ op = \"add\", path = \"/process/env/-\", value = \"LATE=1\" }]\n";
  auto chain = build(config);
  Spec s = Spec::parse(kSpec);
  Context ctx;
  auto result = chain.run(s, ctx);
  CHECK(result.passes == 2);
  CHECK(at(s, "/process/env") == Json::parse(R"(["PATH=/bin", "VGPU_SHARED=1"])"));
  CHECK(at(s, "/annotations/specshim.io~1patches") == "p");

  // A later create (or dry-run) of the patched spec: nothing piles up.
  Spec again = Spec::parse(s.serialize());
  CHECK(chain.run(again, ctx).changed_by.empty());
  CHECK(again.serialize() == s.serialize());

  // A patch that matches later is added to the record, after the earlier names.
  again.json()["annotations"]["late"] = "1";
  CHECK(chain.run(again, ctx).changed_by == std::vector<std::string>{"patches"});
  CHECK(at(again, "/process/env") == Json::parse(R"(["PATH=/bin", "VGPU_SHARED=1", "LATE=1"])"));
  CHECK(at(again, "/annotations/specshim.io~1patches") == "p,q");

  // Names in the record are trimmed; unknown names are kept.
  Spec old = Spec::parse(R"({"annotations": {"specshim.io/patches": " gone , p"}})");
  CHECK(patches::recorded(old) == std::vector<std::string>{"gone", "p"});
  CHECK(chain.run(old, ctx).changed_by.empty());
}

TEST_CASE("patches: an op on the record annotation cannot drop the record") {
  auto chain = build(one("  { op = \"replace\", path = \"/annotations\", value = {} },"));
  Spec s = Spec::parse(kSpec);
  Context ctx;
  chain.run(s, ctx);
  CHECK(at(s, "/annotations").dump() == R"({"specshim.io/patches":"p"})");
}

TEST_CASE("patches: no [[patches]] leaves the modifier out of the chain") {
  auto has_patches = [](const Chain& c) {
    for (const auto& m : c.modifiers())
      if (m->name() == "patches") return true;
    return false;
  };
  CHECK_FALSE(has_patches(build("")));
  CHECK_FALSE(has_patches(build("patches = []\n")));
  CHECK(has_patches(build(one("  { op = \"remove\", path = \"/a\" },"))));
  CHECK(build(one("  { op = \"remove\", path = \"/a\" },")).modifiers().back()->name() == "patches");
}

TEST_CASE("patches: [policy] opt-out-annotation reaches every patch, which then skips an opted-out container") {
  std::string rules = one("  { op = \"add\", path = \"/process/env/-\", value = \"A=1\" },") +
                      "match = { not = { annotations = { \"example.com/system\" = \"true\" } } }\n";
  auto run = [](const std::string& config, const Json& annotations) {
    Spec s = Spec::parse(kSpec);
    for (auto& [k, v] : annotations.items()) s.json()["annotations"][k] = v;
    Context ctx;
    build("[chain]\norder = [\"patches\"]\n" + config).run(s, ctx);
    return at(s, "/process/env").size() == 2;
  };
  std::string policy = "[policy]\nopt-out-annotation = \"example.com/skip-site-rules\"\n";
  CHECK(run(rules, {{"example.com/skip-site-rules", "true"}}));  // off by default
  CHECK_FALSE(run(policy + rules, {{"example.com/skip-site-rules", "true"}}));
  CHECK(run(policy + rules, {{"example.com/skip-site-rules", "false"}}));
  CHECK(run(policy + rules, Json::object()));
  CHECK_FALSE(run(policy + rules, {{"example.com/system", "true"}}));  // excluded by `not`

  auto doc = config::Document::parse(policy + rules, "c.toml");
  CHECK(chain_facts(doc).patches[0].match.describe() ==
        "every container; not (annotation example.com/system = true); unless opted out (annotation "
        "example.com/skip-site-rules = \"true\")");
  // The file as every front-end loads it: read_settings finishes [policy].
  REQUIRE_THROWS_WITH(
      read_config_file(config::Document::parse("[policy]\nopt-out-annotations = \"x\"\n" + rules, "c.toml")),
      Catch::Contains("line 2: unknown key `policy.opt-out-annotations`"));
  REQUIRE_THROWS_WITH(build("[policy]\nopt-out-annotation = \"a b\"\n" + rules),
                      Catch::Contains("line 2: `policy.opt-out-annotation`: \"a b\" is not an annotation key"));
}
