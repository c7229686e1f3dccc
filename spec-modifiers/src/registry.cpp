// SPDX-License-Identifier: Apache-2.0
// One line per modifier, in default chain order. Each modifier lives in its own
// folder (src/<name>/) and exposes make_<name>.
#include "specshim/modifiers/registry.h"

#include <algorithm>
#include <string>

#include "specshim/base/error.h"
#include "specshim/modifiers/allocation_sources.h"
#include "specshim/modifiers/factories.h"
#include "specshim/node/cdi.h"
#include "specshim/node/hotplug.h"

namespace specshim {

namespace {

// alone adapts the factory of a modifier that shares nothing.
template <std::unique_ptr<Modifier> (*make)(config::Section&)>
std::unique_ptr<Modifier> alone(config::Section& section, const ChainPlan&, KubeletSessions&) {
  return make(section);
}

// planned adapts the factory of a modifier that reads only the plan.
template <std::unique_ptr<Modifier> (*make)(config::Section&, const ChainPlan&)>
std::unique_ptr<Modifier> planned(config::Section& section, const ChainPlan& plan, KubeletSessions&) {
  return make(section, plan);
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
      {"passwd", planned<make_passwd>},
      {"device-plugin", make_device_plugin},
      {"cpuset", make_cpuset},
      {"env-devices", make_env_devices},
      {"hotplug", make_hotplug},
      {"cdi", alone<make_cdi>},
      {"requirements", alone<make_requirements>},
      {"devices-cgroup", alone<make_devices_cgroup>},
      {"patches", planned<make_patches>},
      // clang-format on
  };
  return entries;
}

std::vector<std::string> default_order() {
  std::vector<std::string> order;
  for (const auto& e : registry()) order.emplace_back(e.name);
  return order;
}

bool ChainPlan::lists(std::string_view name) const {
  return std::find(order.begin(), order.end(), name) != order.end();
}

ChainPlan plan_chain(config::Section& root) {
  ChainPlan plan;
  // A key left out means its default, whether or not its table is there: a
  // [chain] table of comments alone (the shipped file) keeps the default order.
  plan.order = default_order();
  if (auto chain = root.table("chain")) {
    if (auto o = chain->strings("order")) plan.order = *o;
    if (auto m = chain->integer("max-passes", 1, 64)) plan.max_passes = static_cast<int>(*m);
    chain->finish();
    for (const auto& name : plan.order) {
      auto known = std::find_if(registry().begin(), registry().end(), [&](auto& e) { return e.name == name; });
      if (known == registry().end()) chain->fail("order", "unknown modifier `" + name + "`");
      if (std::count(plan.order.begin(), plan.order.end(), name) > 1)
        chain->fail("order", "modifier `" + name + "` listed twice");
    }
  }
  config::Section kubelet = root.section("kubelet");
  plan.kubelet_keys = read_kubelet_table(kubelet);
  plan.kubelet_configured = hotplug::kubelet_configured(root);
  if (root.kind("env-devices") == config::Kind::array) {
    auto view = root.only("env-devices");
    plan.env_devices = env_devices::read_entries(view, plan.kubelet_keys);
  }
  if (plan.lists("env-devices"))
    for (const auto& e : plan.env_devices)
      if (e.after == env_devices::After::void_value) plan.voided_env.insert(e.env);
  if (plan.lists("cdi")) {
    auto cdi = root.section("cdi");
    plan.cdi = cdi::read_spec_dirs(cdi).has_value();
  }
  if (auto hotplug = root.table("hotplug");
      hotplug && hotplug->kind("enabled") == config::Kind::boolean && hotplug->boolean("enabled") == true)
    plan.allocation = allocation_sources(root, plan.kubelet_keys, plan.env_devices, "/proc");
  plan.opt_out = read_opt_out_annotation(root);
  return plan;
}

std::string read_opt_out_annotation(config::Section& root) {
  // [policy] is finished by read_settings (config_file.cpp), which reads its
  // every key: this Section knows only the one read here.
  config::Section policy = root.section("policy");
  return read_opt_out(policy);
}

Chain build_chain(config::Section& root) {
  const ChainPlan plan = plan_chain(root);
  KubeletSessions sessions;  // each modifier that asks the kubelet keeps the session it uses
  std::vector<std::unique_ptr<Modifier>> modifiers;
  for (const auto& e : registry()) {
    // Every modifier's table is validated, even when it is not in the order.
    // A modifier written as a list of rules ([[name]]) reads them from a view
    // of the root that sees only its key.
    config::Section section = root.kind(e.name) == config::Kind::array ? root.only(e.name) : root.section(e.name);
    std::unique_ptr<Modifier> m = e.make(section, plan, sessions);
    section.finish();
    if (m && plan.lists(e.name)) modifiers.push_back(std::move(m));
  }
  std::stable_sort(modifiers.begin(), modifiers.end(), [&](auto& a, auto& b) {
    return std::find(plan.order.begin(), plan.order.end(), a->name()) <
           std::find(plan.order.begin(), plan.order.end(), b->name());
  });
  if (std::string problem = feed_order_problem(modifiers); !problem.empty()) {
    if (auto chain = root.table("chain")) chain->fail("order", problem);
    throw Error("the default chain order: " + problem);  // a bug in registry()
  }
  return Chain(std::move(modifiers), plan.max_passes);
}

}  // namespace specshim
