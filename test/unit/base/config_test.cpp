// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/config.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/modifiers/chain_facts.h"
#include "specshim/modifiers/cpuset.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/modifiers/registry.h"
#include "specshim/node/kubelet_session.h"
#include "tempdir.h"
#include "toml_prescan.h"

using namespace specshim;

TEST_CASE("config reads typed values and rejects unknown keys with their line") {
  auto doc = config::Document::parse("[passwd]\nenabled = true\nhome = \"/h\"\nbogus = 1\n", "/etc/x.toml");
  auto root = doc.root();
  auto p = root.section("passwd");
  REQUIRE(p.boolean("enabled") == true);
  REQUIRE(p.string("home") == "/h");
  REQUIRE(p.string("absent") == std::nullopt);
  REQUIRE_THROWS_WITH(p.finish(), "config `/etc/x.toml`: line 4: unknown key `passwd.bogus`");
}

TEST_CASE("config wrong types and ranges name file, key and line") {
  auto doc = config::Document::parse("[chain]\nmax-passes = \"8\"\n", "c.toml");
  auto root = doc.root();
  auto chain = root.section("chain");
  REQUIRE_THROWS_WITH(chain.integer("max-passes", 1, 64),
                      "config `c.toml`: line 2: `chain.max-passes`: must be an integer");
  auto doc2 = config::Document::parse("[chain]\nmax-passes = 0\n", "c.toml");
  auto root2 = doc2.root();
  REQUIRE_THROWS_WITH(build_chain(root2), Catch::Contains("`chain.max-passes`: must be between 1 and 64"));
}

TEST_CASE("config syntax errors carry the line") {
  REQUIRE_THROWS_WITH(config::Document::parse("a = 1\nb = = 2\n", "bad.toml"),
                      Catch::StartsWith("config `bad.toml`: line 2: "));
}

TEST_CASE("config missing file is the defaults") {
  auto doc = config::Document::load("/nonexistent/specshim.toml");
  REQUIRE_FALSE(doc.exists());
  auto root = doc.root();
  REQUIRE_NOTHROW(build_chain(root));
  REQUIRE_NOTHROW(root.finish());
}

TEST_CASE("config chain order rejects unknown modifiers") {
  auto doc = config::Document::parse("[chain]\norder = [\"nope\"]\n", "c.toml");
  auto root = doc.root();
  REQUIRE_THROWS_WITH(build_chain(root), Catch::Contains("unknown modifier `nope`"));
}

TEST_CASE("config chain order refuses a modifier before the one whose requests it reads") {
  const std::string entry = "[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n";
  auto wrong = config::Document::parse("[chain]\norder = [\"cdi\", \"env-devices\"]\n" + entry, "c.toml");
  auto root = wrong.root();
  REQUIRE_THROWS_WITH(build_chain(root),
                      Catch::Contains("`chain.order`") &&
                          Catch::Contains("`cdi` reads the device requests that `env-devices` makes, but runs before "
                                          "it: list `env-devices` before `cdi`"));
  auto right = config::Document::parse("[chain]\norder = [\"env-devices\", \"cdi\"]\n" + entry, "c.toml");
  auto root2 = right.root();
  REQUIRE_NOTHROW(build_chain(root2));
}

TEST_CASE("config arrays of tables get indexed names") {
  auto doc = config::Document::parse("[[r]]\nname = \"a\"\n[[r]]\nname = 1\n", "c.toml");
  auto root = doc.root();
  auto rs = root.tables("r");
  REQUIRE(rs.size() == 2);
  REQUIRE(rs[0].string("name") == "a");
  REQUIRE_THROWS_WITH(rs[1].string("name"), "config `c.toml`: line 4: `r[1].name`: must be a string");
}

TEST_CASE("config a table read as JSON keeps the file's order, however many keys it has") {
  std::string text = "[p.value]\n";
  for (int i = 20000; i > 0; --i) text += "k" + std::to_string(i) + " = " + std::to_string(i) + "\n";
  text += "[p.value.nested]\nb = [1, {c = \"d\"}]\na = true\n";
  auto doc = config::Document::parse(text, "/etc/x.toml");
  auto p = doc.root().section("p");
  auto v = p.json("value");
  REQUIRE(v);
  REQUIRE(v->size() == 20001);
  CHECK(v->begin().key() == "k20000");
  CHECK((*v)["k1"] == 1);
  CHECK(v->back().dump() == R"({"b":[1,{"c":"d"}],"a":true})");
}

TEST_CASE("config non-ASCII outside strings is refused before the TOML parser sees it") {
  // U+FEF7 between tokens sent toml++ 3.3 into __builtin_unreachable (found by fuzz:config).
  REQUIRE_THROWS_WITH(config::Document::parse("h\xef\xbb\xb7osgd]\n", "f.toml"),
                      "config `f.toml`: line 1: non-ASCII character outside a string or comment");
  REQUIRE_THROWS_WITH(config::Document::parse("a = 1\n\xc3\xa9 = 2\n", "f.toml"), Catch::Contains("line 2: non-ASCII"));
  // A quote inside a bare value does not open a string: toml++ scans `0['...'` as one bare value
  // (found by fuzz:config, U+047A).
  REQUIRE_THROWS_WITH(config::Document::parse("cis =0['\xd1\xba'\n", "f.toml"), Catch::Contains("line 1: non-ASCII"));
  REQUIRE_THROWS_WITH(config::Document::parse("x = 0=\"\xc3\xa9\"\n", "f.toml"), Catch::Contains("line 1: non-ASCII"));
  REQUIRE_THROWS_WITH(config::Document::parse("x = [\n  1.'\xc3\xa9'\n]\n", "f.toml"),
                      Catch::Contains("line 2: non-ASCII"));
  // toml++ tests what follows a backslash in a multi-line basic string for whitespace (found by fuzz:config).
  REQUIRE_THROWS_WITH(config::Document::parse("x = \"\"\"a \\\n   \xce\x99"
                                              "b\"\"\"\n",
                                              "f.toml"),
                      Catch::Contains("non-ASCII"));
  // Inside strings and comments it is fine, also where a key ends at '=' or '.' without a space.
  auto doc = config::Document::parse(
      "# caf\xc3\xa9\na = \"\xc3\xa9\\\"\"\nb = '\xc3\xa9'\nc = \"\"\"x\n\xc3\xa9\"\"\"\nd = '''\xc3\xa9'''\n",
      "f.toml");
  auto root = doc.root();
  REQUIRE(root.string("a") == "\xc3\xa9\"");
  REQUIRE(root.string("b") == "\xc3\xa9");
  REQUIRE(root.string("c") == "x\n\xc3\xa9");
  REQUIRE(root.string("d") == "\xc3\xa9");
  auto tight = config::Document::parse(
      "a=\"\xc3\xa9\"\nb = [\"x\",'\xc3\xa9']\nc = {k='\xc3\xa9'}#\xc3\xa9\n[t.\"\xc3\xa9\"]\nv = 1\n", "f.toml");
  auto r2 = tight.root();
  REQUIRE(r2.string("a") == "\xc3\xa9");
}

TEST_CASE("config comments are left out of what toml++ reads, every line and column kept") {
  using detail::prescan_toml;
  REQUIRE(prescan_toml("a = 1 # one\n# two\r\nb = '#'  #x\r\n#end").text == "a = 1 \n\r\nb = '#'  \r\n");
  // A comment toml++ could refuse stays for it to judge: control characters, a lone CR, any non-ASCII.
  REQUIRE(prescan_toml("#a\x01\n#b\rc\n# caf\xc3\xa9\n#\x7f\n").text == "#a\x01\n#b\rc\n# caf\xc3\xa9\n#\x7f\n");
  REQUIRE(prescan_toml("#\tall plain ~ 0123456789 abcdefghij\n").text == "\n");
  // A lone CR before a comment: the comment stays, or the CR would meet the LF (fuzz:config).
  REQUIRE(prescan_toml("\r#\n").text == "\r#\n");
  REQUIRE(prescan_toml("a = 1\r# x\r\n").text == "a = 1\r# x\r\n");
  REQUIRE_THROWS_WITH(config::Document::parse("\r#\n", "f.toml"), Catch::StartsWith("config `f.toml`: line 1: "));
  REQUIRE_THROWS_WITH(config::Document::parse("# bell\x07\nx = 1\n", "f.toml"),
                      Catch::StartsWith("config `f.toml`: line 1: "));

  // '#' inside every kind of string is text, also at the start of a line of a multi-line string.
  auto doc = config::Document::parse(
      "a = \"/x#y\\\"#\" # c\n"
      "b = '#'\n"
      "c = \"\"\"\n# not a comment\"\"\"\"  # c\n"
      "d = '''\n#x'''''\n"
      "e = [ # c\n  \"#\", # c\n]\n",
      "f.toml");
  auto root = doc.root();
  REQUIRE(root.string("a") == "/x#y\"#");
  REQUIRE(root.string("b") == "#");
  REQUIRE(root.string("c") == "# not a comment\"");
  REQUIRE(root.string("d") == "#x''");
  REQUIRE(root.strings("e") == std::vector<std::string>{"#"});

  // Lines are where the file has them: in toml++'s errors and in specshim's own.
  auto commented = config::Document::parse("# one\n# two\n[passwd] # three\nbogus = 1 # four\n", "f.toml");
  auto r = commented.root();
  auto passwd = r.section("passwd");
  REQUIRE_THROWS_WITH(passwd.finish(), "config `f.toml`: line 4: unknown key `passwd.bogus`");
  REQUIRE_THROWS_WITH(config::Document::parse("# one\n[a] # two\nx = # three\n", "f.toml"),
                      Catch::StartsWith("config `f.toml`: line 3: "));
}

TEST_CASE("config the shipped example leaves toml++ a few hundred bytes to read") {
  auto shipped = config::Document::load(specshim::test::kShippedConfig);
  auto pre = detail::prescan_toml([] {
    std::ifstream in(specshim::test::kShippedConfig, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }());
  // Nearly all of the file is comments; toml++ reads a fraction of it.
  REQUIRE(pre.text.size() < 1024);
  auto root = shipped.root();
  REQUIRE_NOTHROW(build_chain(root));
}

namespace {

// kK0s is a node whose kubelet is not at /var/lib/kubelet (k0s).
constexpr const char* kK0s = "[kubelet]\nroot = \"/var/lib/k0s/kubelet\"\nbudget-ms = 700\n";

}  // namespace

TEST_CASE("config [kubelet] root and budget-ms are what device-plugin and cpuset start from") {
  auto doc = config::Document::parse(std::string(kK0s) + "[device-plugin]\nenabled = true\n[cpuset]\nenabled = true\n",
                                     "k.toml");
  auto root = doc.root();
  auto kubelet = root.section("kubelet");
  KubeletKeys keys = read_kubelet_table(kubelet);
  REQUIRE(keys.root == "/var/lib/k0s/kubelet");
  REQUIRE(keys.budget == std::chrono::milliseconds(700));
  auto dp_table = root.section("device-plugin");
  auto dp = device_plugin::read_table(dp_table, keys);
  REQUIRE(dp.kubelet_root == "/var/lib/k0s/kubelet");
  REQUIRE(dp.budget == std::chrono::milliseconds(700));
  auto cpuset_table = root.section("cpuset");
  auto cs = cpuset::read_table(cpuset_table, keys);
  REQUIRE(cs.kubelet_root == "/var/lib/k0s/kubelet");
  REQUIRE(cs.budget == std::chrono::milliseconds(700));
  REQUIRE_NOTHROW(build_chain(root));
  REQUIRE_NOTHROW(root.finish());

  // Without [kubelet]: the defaults.
  auto plain = config::Document::parse("", "k.toml");
  auto plain_root = plain.root();
  auto none = plain_root.section("kubelet");
  KubeletKeys defaults = read_kubelet_table(none);
  REQUIRE(defaults.root == "/var/lib/kubelet");
  REQUIRE(defaults.budget == std::chrono::milliseconds(2000));
}

TEST_CASE("config a table's own kubelet keys override [kubelet] for that table alone") {
  auto doc = config::Document::parse(std::string(kK0s) +
                                         "[device-plugin]\nbudget-ms = 300\n"
                                         "[cpuset]\nkubelet-root = \"/var/snap/microk8s/common/var/lib/kubelet\"\n",
                                     "k.toml");
  auto root = doc.root();
  auto kubelet = root.section("kubelet");
  KubeletKeys keys = read_kubelet_table(kubelet);
  auto dp_table = root.section("device-plugin");
  auto dp = device_plugin::read_table(dp_table, keys);
  REQUIRE(dp.kubelet_root == "/var/lib/k0s/kubelet");
  REQUIRE(dp.budget == std::chrono::milliseconds(300));
  auto cpuset_table = root.section("cpuset");
  auto cs = cpuset::read_table(cpuset_table, keys);
  REQUIRE(cs.kubelet_root == "/var/snap/microk8s/common/var/lib/kubelet");
  REQUIRE(cs.budget == std::chrono::milliseconds(700));
}

TEST_CASE(
    "config [[env-devices]] entries get [kubelet]'s root and budget through build_chain unless they set kubelet-root") {
  auto doc =
      config::Document::parse(std::string(kK0s) +
                                  "[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n"
                                  "[[env-devices]]\nenv = \"AMD_VISIBLE_DEVICES\"\nkind = \"amd.com/gpu\"\n"
                                  "kubelet-root = \"/opt/kubelet\"\n",
                              "k.toml");
  auto root = doc.root();
  Chain chain = build_chain(root);
  root.finish();
  ChainFacts facts = chain_facts(doc);
  const auto& entries = facts.env_devices;
  REQUIRE(entries.size() == 2);
  REQUIRE(entries[0].kubelet_root == "/var/lib/k0s/kubelet");
  REQUIRE(entries[0].budget == std::chrono::milliseconds(700));
  REQUIRE(entries[1].kubelet_root == "/opt/kubelet");
  REQUIRE(entries[1].budget == std::chrono::milliseconds(700));
}

TEST_CASE("config chain_facts holds the rule lists of the modifiers [chain] order lists, and only those") {
  const std::string lists =
      "[[requirements]]\nname = \"vfio\"\nmatch = { devices = [\"/dev/vfio/*\"] }\n"
      "[[patches]]\nname = \"p\"\nops = [{ op = \"remove\", path = \"/a\" }]\n"
      "[[env-devices]]\nenv = \"NVIDIA_VISIBLE_DEVICES\"\nkind = \"nvidia.com/gpu\"\n";
  ChainFacts all = chain_facts(config::Document::parse(lists, "c.toml"));
  REQUIRE(all.rules.size() == 1);
  CHECK(all.rules[0].name == "vfio");
  REQUIRE(all.patches.size() == 1);
  CHECK(all.patches[0].name == "p");
  REQUIRE(all.env_devices.size() == 1);
  CHECK(all.env_devices[0].env == "NVIDIA_VISIBLE_DEVICES");

  ChainFacts none = chain_facts(config::Document::parse("[chain]\norder = [\"passwd\"]\n" + lists, "c.toml"));
  CHECK(none.rules.empty());
  CHECK(none.patches.empty());
  CHECK(none.env_devices.empty());
}

TEST_CASE("config [kubelet] is strict like every table: unknown keys and bad values name file and line") {
  auto err = [](const std::string& text) {
    auto doc = config::Document::parse(text, "k.toml");
    auto root = doc.root();
    try {
      build_chain(root);
      root.finish();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  REQUIRE(err("[kubelet]\nroot = \"/var/lib/kubelet\"\nbogus = 1\n") ==
          "config `k.toml`: line 3: unknown key `kubelet.bogus`");
  // The tables' key name is not [kubelet]'s.
  REQUIRE(err("[kubelet]\nkubelet-root = \"/k\"\n") == "config `k.toml`: line 2: unknown key `kubelet.kubelet-root`");
  REQUIRE(err("[kubelet]\nroot = \"var/lib/kubelet\"\n") ==
          "config `k.toml`: line 2: `kubelet.root`: must be an absolute path");
  REQUIRE_THAT(err("[kubelet]\nbudget-ms = 0\n"),
               Catch::Contains("line 2: `kubelet.budget-ms`: must be between 1 and 600000"));
  REQUIRE_THAT(err("[kubelet]\nroot = 1\n"), Catch::Contains("`kubelet.root`: must be a string"));
  REQUIRE(err("[kubelet]\n") == "no error");
}
