// SPDX-License-Identifier: Apache-2.0
// The config file users get: packaging/specshim.toml, installed as
// /etc/specshim/config.toml by the .deb (its conffile is this very file) and by
// install-on-host.sh. It is mostly comments and must leave every default as
// it is; and a table that is present but leaves keys out means their defaults.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "specshim/base/config.h"
#include "specshim/modifiers/registry.h"
#include "tempdir.h"

using namespace specshim;

namespace {

using test::kShippedConfig;

// The modifiers on by default, as README.md and the shipped file's header say.
const std::vector<std::string> kDocumentedDefaults = {"passwd", "cdi", "devices-cgroup"};

std::vector<std::string> modifiers_on(const config::Document& doc) {
  auto root = doc.root();
  Chain chain = build_chain(root);
  std::vector<std::string> names;
  for (const auto& m : chain.modifiers()) names.emplace_back(m->name());
  return names;
}

std::vector<std::string> modifiers_on(const std::string& text) {
  return modifiers_on(config::Document::parse(text, "test.toml"));
}

std::vector<std::string> lines_of(const std::string& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("the shipped config turns on exactly the documented default modifiers") {
  auto doc = config::Document::load(kShippedConfig);
  REQUIRE(doc.exists());
  REQUIRE(modifiers_on(doc) == kDocumentedDefaults);
  REQUIRE(modifiers_on(config::Document::load("/nonexistent/config.toml")) == kDocumentedDefaults);
  auto root = doc.root();
  REQUIRE_NOTHROW(build_chain(root));
}

TEST_CASE("a table that is present but empty means its defaults, for every table") {
  const auto defaults = modifiers_on("");
  REQUIRE(defaults == kDocumentedDefaults);
  std::vector<std::string> tables = {"chain", "runtime", "log", "kubelet", "policy"};
  for (const auto& e : registry()) tables.emplace_back(e.name);
  for (const auto& t : tables) {
    INFO("[" << t << "]");
    REQUIRE(modifiers_on("[" + t + "]\n") == defaults);
    REQUIRE(modifiers_on("[" + t + "]\n# every key a comment\n") == defaults);
  }
  REQUIRE(modifiers_on("[chain]\nmax-passes = 4\n") == defaults);
  REQUIRE(modifiers_on("[chain]\norder = []\n").empty());  // said, so meant
}

TEST_CASE("each commented default in the shipped config, written out alone, changes nothing") {
  // `# key = value` lines directly under a real [table] header are the
  // defaults the file documents; under a commented-out header (an example
  // [[rule]]) they are examples, not defaults.
  const auto lines = lines_of(kShippedConfig);
  const auto defaults = modifiers_on(config::Document::load(kShippedConfig));
  bool in_example = false;
  int checked = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.rfind("[", 0) == 0) in_example = false;
    if (line.rfind("# [", 0) == 0) in_example = true;
    if (in_example || line.rfind("# ", 0) != 0) continue;
    std::string rest = line.substr(2);
    auto eq = rest.find(" = ");
    if (eq == std::string::npos || rest.find_first_of(" #") < eq || rest.empty() || !std::isalpha(rest[0])) continue;
    std::vector<std::string> edited = lines;
    edited[i] = rest;
    std::ostringstream text;
    for (const auto& l : edited) text << l << "\n";
    INFO("line " << i + 1 << ": " << rest);
    REQUIRE(modifiers_on(text.str()) == defaults);
    ++checked;
  }
  REQUIRE(checked >= 20);
}

TEST_CASE("the shipped config's commented chain order is the default order") {
  std::string expected = "# order = [";
  for (const auto& name : default_order()) expected += (expected.back() == '[' ? "\"" : ", \"") + name + "\"";
  expected += "]";
  const auto lines = lines_of(kShippedConfig);
  REQUIRE(std::find(lines.begin(), lines.end(), expected) != lines.end());
}
