// SPDX-License-Identifier: Apache-2.0
// One line per modifier, in default chain order. Each modifier lives in its own
// file (src/<name>.cpp) and exposes make_<name>.
#include "specshim/registry.h"

#include <algorithm>
#include <string>

#include "specshim/error.h"
#include "specshim/modifiers.h"

namespace specshim {

namespace {

// alone adapts the factory of a modifier that shares nothing.
template <std::unique_ptr<Modifier> (*make)(config::Section&)>
std::unique_ptr<Modifier> alone(config::Section& section, Shared&) {
  return make(section);
}

// feed_order_problem says which modifier would read a part of the context
// (Feed) before a later one writes it, or "" when none does.
std::string feed_order_problem(const std::vector<std::unique_ptr<Modifier>>& chain) {
  for (std::size_t reader = 0; reader < chain.size(); ++reader)
    for (Feed feed : chain[reader]->feeds().consumes)
      for (std::size_t writer = reader + 1; writer < chain.size(); ++writer) {
        const auto& produces = chain[writer]->feeds().produces;
        if (std::find(produces.begin(), produces.end(), feed) == produces.end()) continue;
        std::string r(chain[reader]->name()), w(chain[writer]->name());
        return "`" + r + "` reads " + feed_name(feed) + " that `" + w + "` makes, but runs before it: list `" + w +
               "` before `" + r + "`";
      }
  return "";
}

}  // namespace

const std::vector<ModifierEntry>& registry() {
  static const std::vector<ModifierEntry> entries = {
      // modifier entries go here, in default order
      // clang-format off
      {"passwd", alone<make_passwd>},
      {"device-plugin", make_device_plugin},
      {"cpuset", make_cpuset},
      {"env-devices", make_env_devices},
      {"hotplug", make_hotplug},
      {"cdi", alone<make_cdi>},
      {"requirements", alone<make_requirements>},
      {"devices-cgroup", alone<make_devices_cgroup>},
      {"patches", alone<make_patches>},
      // clang-format on
  };
  return entries;
}

std::vector<std::string> default_order() {
  std::vector<std::string> order;
  for (const auto& e : registry()) order.emplace_back(e.name);
  return order;
}

Chain build_chain(config::Section& root) {
  // A key left out means its default, whether or not its table is there: a
  // [chain] table of comments alone (the shipped file) keeps the default order.
  std::vector<std::string> order = default_order();
  std::int64_t max_passes = 8;
  if (auto chain = root.table("chain")) {
    if (auto o = chain->strings("order")) order = *o;
    if (auto m = chain->integer("max-passes", 1, 64)) max_passes = *m;
    chain->finish();
    for (const auto& name : order) {
      auto known = std::find_if(registry().begin(), registry().end(), [&](auto& e) { return e.name == name; });
      if (known == registry().end()) chain->fail("order", "unknown modifier `" + name + "`");
      if (std::count(order.begin(), order.end(), name) > 1)
        chain->fail("order", "modifier `" + name + "` listed twice");
    }
  }

  std::vector<std::unique_ptr<Modifier>> modifiers;
  Shared shared;  // each modifier keeps what it uses
  config::Section kubelet = root.section("kubelet");
  shared.kubelet_keys = read_kubelet_table(kubelet);
  shared.root = &root;
  for (const auto& e : registry()) {
    // Every modifier's table is validated, even when it is not in the order.
    // A modifier written as a list of rules ([[name]]) reads them from a view
    // of the root that sees only its key.
    config::Section section = root.kind(e.name) == config::Kind::array ? root.only(e.name) : root.section(e.name);
    std::unique_ptr<Modifier> m = e.make(section, shared);
    section.finish();
    if (m && std::find(order.begin(), order.end(), e.name) != order.end()) modifiers.push_back(std::move(m));
  }
  *shared.cdi_on = std::any_of(modifiers.begin(), modifiers.end(), [](auto& m) { return m->name() == "cdi"; });
  std::stable_sort(modifiers.begin(), modifiers.end(), [&](auto& a, auto& b) {
    return std::find(order.begin(), order.end(), a->name()) < std::find(order.begin(), order.end(), b->name());
  });
  if (std::string problem = feed_order_problem(modifiers); !problem.empty()) {
    if (auto chain = root.table("chain")) chain->fail("order", problem);
    throw Error("the default chain order: " + problem);  // a bug in registry()
  }
  return Chain(std::move(modifiers), static_cast<int>(max_passes));
}

ChainFacts facts_of(const Chain& chain) {
  ChainFacts facts;
  for (const auto& m : chain.modifiers()) m->add_facts(facts);
  return facts;
}

}  // namespace specshim
