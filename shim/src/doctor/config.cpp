// SPDX-License-Identifier: Apache-2.0
// Doctor's config check: the config loads exactly as create would load it.
#include <algorithm>

#include "doctor/doctor.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/chain_facts.h"
#include "specshim/modifiers/config_file.h"
#include "specshim/modifiers/factories.h"
#include "specshim/modifiers/patches.h"
#include "specshim/modifiers/registry.h"
#include "specshim/node/cdi.h"

namespace specshim::shim::doctor {
namespace {

// describe_rule says in one line what a rule adds.
std::string describe_rule(const requirements::Rule& r) {
  std::vector<std::string> adds = r.capabilities;
  for (const auto& l : r.rlimits) adds.push_back(l.type);
  for (const auto& s : r.seccomp_allow) adds.push_back("seccomp:" + s);
  for (auto g : r.additional_gids) adds.push_back("gid:" + std::to_string(g));
  for (const auto& e : r.env) adds.push_back("env:" + e.substr(0, e.find('=')));
  return "`" + r.name + "` adds " + join(adds, " ");
}

// passwd_scope says which containers get passwd entries and what happens
// where one cannot be ensured: what a default-handler rollout changes.
std::string passwd_scope(const config::Document& doc) {
  auto root = doc.root();
  std::string opt_out = read_opt_out_annotation(root);
  auto passwd = root.section("passwd");
  PasswdScope scope = read_passwd_scope(passwd, opt_out);
  return "passwd: entries for " + scope.match.describe() +
         (scope.required ? "; an entry that cannot be ensured fails the create (required = true)"
                         : "; where an entry cannot be ensured the container runs without one (required = false)");
}

// read_probed_tables reads [cdi], [kubelet], [device-plugin], [cpuset] and [hotplug]
// with their modifiers' readers, for the checks that look where a create
// would.
void read_probed_tables(const config::Document& doc, Loaded& loaded) {
  auto root = doc.root();
  auto cdi = root.section("cdi");
  loaded.cdi_dirs = cdi::read_spec_dirs(cdi);
  loaded.cdi_cache_dir = loaded.cdi_dirs ? cdi::read_cache_dir(cdi) : "";
  auto kubelet = root.section("kubelet");
  loaded.kubelet = read_kubelet_table(kubelet);
  auto device_plugin = root.section("device-plugin");
  loaded.device_plugin = device_plugin::read_table(device_plugin, loaded.kubelet);
  auto cpuset = root.section("cpuset");
  loaded.cpuset = cpuset::read_table(cpuset, loaded.kubelet);
  auto hotplug = root.section("hotplug");
  loaded.hotplug = hotplug::read_config(hotplug, hotplug::kubelet_configured(root));
}

// kubelet_roots warns when the modifiers that are on and ask the kubelet
// look for it in different roots: a node has one kubelet, so all but one
// of them fail (or, with on-error = "skip", do nothing).
void kubelet_roots(const Loaded& loaded, Check& c) {
  std::vector<std::pair<std::string, std::string>> users;  // modifier, root
  if (loaded.on("device-plugin")) users.emplace_back("device-plugin", loaded.device_plugin.kubelet_root.string());
  if (loaded.on("cpuset")) users.emplace_back("cpuset", loaded.cpuset.kubelet_root.string());
  for (const auto& e : loaded.env_devices) users.emplace_back("env-devices `" + e.env + "`", e.kubelet_root.string());
  auto same = [](const std::string& a, const std::string& b) {
    return std::filesystem::path(a).lexically_normal() == std::filesystem::path(b).lexically_normal();
  };
  if (std::all_of(users.begin(), users.end(), [&](const auto& u) { return same(u.second, users.front().second); }))
    return;
  std::vector<std::string> parts;
  for (const auto& [who, root] : users) parts.push_back(who + " " + root);
  c.add(Severity::warn,
        "the modifiers that ask the kubelet look for it in different roots (" + join(parts, ", ") +
            "): a node has one kubelet; set [kubelet] root once and leave out the tables' kubelet-root");
}

// why_none_on says which keys turned every modifier off: `chain.order`
// when it leaves them out, else each `<modifier>.enabled = false`, and the
// modifiers that are off until configured. A node where specshim changes
// nothing is almost always a mistake (issue 27: the shipped file did that).
std::string why_none_on(const config::Document& doc) {
  auto root = doc.root();
  std::vector<std::string> order = default_order();
  std::string left_out;
  if (auto chain = root.table("chain"); chain && chain->has("order")) {
    order = chain->strings("order").value_or(order);
    if (order.empty()) return chain->where("order") + " is empty";
    left_out = chain->where("order") + " leaves out ";
  }
  std::vector<std::string> disabled, unlisted, unconfigured;
  for (const auto& e : registry()) {
    std::string name(e.name);
    if (std::find(order.begin(), order.end(), name) == order.end()) {
      unlisted.push_back(name);
      continue;
    }
    auto table = root.kind(name) == config::Kind::table ? root.table(name) : std::nullopt;
    if (table && table->boolean("enabled") == false)
      disabled.push_back(table->where("enabled"));
    else
      unconfigured.push_back(name);
  }
  std::vector<std::string> parts;
  if (!unlisted.empty()) parts.push_back(left_out + join(unlisted, ", "));
  if (!disabled.empty()) parts.push_back(join(disabled, ", ") + (disabled.size() == 1 ? " is" : " are") + " false");
  if (!unconfigured.empty())
    parts.push_back(join(unconfigured, ", ") + (unconfigured.size() == 1 ? " is" : " are") + " off until configured");
  return join(parts, "; ");
}

}  // namespace

Check check_config(const std::filesystem::path& file, Loaded& loaded) {
  Check c("config");
  read_probed_tables(config::Document::parse("", "built-in defaults"), loaded);
  std::optional<config::Document> parsed;  // the file, when it parses
  try {
    parsed = config::Document::load(file);
    ConfigFile config = read_config_file(*parsed);
    const config::Document& doc = config.doc;
    loaded.settings = config.settings;
    loaded.nri = config.nri;
    loaded.nri_table = doc.root().table("nri").has_value();
    read_probed_tables(doc, loaded);
    loaded.valid = true;
    c.add(Severity::ok, file.string() + (doc.exists() ? ": valid" : ": absent, built-in defaults"));
    for (const auto& m : config.chain.modifiers()) loaded.modifiers_on.emplace_back(m->name());
    ChainFacts facts = chain_facts(doc);
    loaded.rules = std::move(facts.rules);
    loaded.env_devices = std::move(facts.env_devices);
    for (const auto& patch : facts.patches)
      c.add(Severity::info, "patch `" + patch.name + "`: " + std::to_string(patch.ops.size()) + " ops, " +
                                std::to_string(patch.set_mounts.size()) + " set-mounts; for " + patch.match.describe());
    std::string on, off;
    for (const auto& e : registry()) {
      std::string& list = loaded.on(e.name) ? on : off;
      list += (list.empty() ? "" : ", ") + std::string(e.name);
    }
    c.add(Severity::info, "modifiers on: " + (on.empty() ? "none" : on) + "; off: " + (off.empty() ? "none" : off));
    if (on.empty()) c.add(Severity::warn, "no modifier is on, so specshim changes no container: " + why_none_on(doc));
    if (loaded.on("passwd")) c.add(Severity::info, passwd_scope(doc));
    for (const auto& r : loaded.rules) {
      c.add(Severity::info, "requirements rule " + describe_rule(r));
      // specshim.io/resources is written by the device-plugin modifier; without it the annotation is
      // absent or, worse, whatever a pod's annotations put there.
      if (!r.match.resources.empty() && !loaded.on("device-plugin"))
        c.add(Severity::warn, "requirements rule `" + r.name +
                                  "` matches resources, but the device-plugin modifier "
                                  "that writes " +
                                  std::string(requirements::kResourcesAnnotation) + " is off");
    }
    for (const auto& e : loaded.env_devices) {
      c.add(Severity::info, "env-devices `" + e.env + "`: bare names are `" + e.kind + "`; grants of " +
                                join(e.resources, ", ") + " count" +
                                (e.volume_mounts.empty() ? "" : "; volume-mounts below " + e.volume_mounts) + "; " +
                                (e.grammar == env_devices::Grammar::ascend ? "Ascend's" : "NVIDIA's") +
                                " grammar; after = " + (e.after == env_devices::After::keep ? "\"keep\"" : "\"void\""));
      if (!loaded.on("cdi"))
        c.add(Severity::warn, "env-devices `" + e.env + "`: the cdi modifier that injects its devices is off: " +
                                  "creates that ask for devices fail");
    }
    // [device-plugin.dra] is read by device-plugin and resolved by cdi: with
    // either off, siblings get no claims, and nothing else would say so.
    for (const char* needed : {"device-plugin", "cdi"})
      if (loaded.device_plugin.dra.enabled && !loaded.on(needed))
        c.add(Severity::warn, std::string("[device-plugin.dra] is enabled, but the ") + needed +
                                  " modifier is off: siblings get no DRA claims");
    kubelet_roots(loaded, c);
    if (config.settings.on_config_error == OnConfigError::pass)
      c.add(Severity::warn,
            "[policy] on-config-error = \"pass\": should this file stop loading (an edit, an upgrade that drops a "
            "key), containers start without the chain: no grant is checked, no device injected");
  } catch (const std::exception& e) {
    c.add(Severity::fail, describe(e));
    c.add(Severity::info, parsed && on_config_error_only(*parsed) == OnConfigError::pass
                              ? "until it loads, containers start WITHOUT the chain ([policy] on-config-error = "
                                "\"pass\"), and sandboxes start untouched"
                              : "until it loads, every container's create fails with this error; sandboxes start "
                                "untouched");
  }
  return c;
}

}  // namespace specshim::shim::doctor
