// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/config_file.h"

#include "specshim/base/error.h"
#include "specshim/node/cdi.h"
#include "specshim/node/container_match.h"

namespace specshim {

Settings read_settings(config::Section& root) {
  Settings s;
  auto runtime = root.section("runtime");
  s.runtime_path = runtime.string("path");
  if (s.runtime_path && (s.runtime_path->empty() || (*s.runtime_path)[0] != '/'))
    runtime.fail("path", "must be an absolute path");
  runtime.finish();

  auto logt = root.section("log");
  s.log_file = logt.string("file");
  if (s.log_file && (s.log_file->empty() || (*s.log_file)[0] != '/')) logt.fail("file", "must be an absolute path");
  if (auto level = logt.string("level")) {
    static const std::pair<const char*, log::Level> levels[] = {
        {"trace", log::Level::trace}, {"debug", log::Level::debug}, {"info", log::Level::info},
        {"warn", log::Level::warn},   {"error", log::Level::error}, {"off", log::Level::off}};
    bool found = false;
    for (auto& [name, l] : levels)
      if (*level == name) s.log_level = l, found = true;
    if (!found) logt.fail("level", "must be one of trace, debug, info, warn, error, off");
  }
  logt.finish();

  auto policy = root.section("policy");
  if (auto on_error = policy.string("on-config-error")) {
    if (*on_error == "pass")
      s.on_config_error = OnConfigError::pass;
    else if (*on_error != "fail")
      policy.fail("on-config-error", "must be \"fail\" (the default) or \"pass\"");
  }
  read_opt_out(policy);  // the chain's plan keeps it (plan_chain); read here so that finish knows it
  policy.finish();
  return s;
}

OnConfigError on_config_error_only(const config::Document& doc) {
  try {
    auto root = doc.root();
    auto on_error = root.section("policy").string("on-config-error");
    return on_error == "pass" ? OnConfigError::pass : OnConfigError::fail;
  } catch (const std::exception&) {
    return OnConfigError::fail;
  }
}

ConfigFile read_config_file(const std::filesystem::path& file) {
  return read_config_file(config::Document::load(file));
}

ConfigFile read_config_file(config::Document doc) {
  auto root = doc.root();
  Settings settings = read_settings(root);
  NriSettings nri = read_nri_settings(root);
  Chain chain = build_chain(root);
  auto cdi = root.section("cdi");
  auto cdi_dirs = cdi::read_spec_dirs(cdi);
  auto hotplug_table = root.section("hotplug");
  hotplug::Config hotplug = hotplug::read_config(hotplug_table, hotplug::kubelet_configured(root));
  root.finish();
  return ConfigFile{std::move(doc),   std::move(settings), std::move(nri),
                    std::move(chain), std::move(cdi_dirs), std::move(hotplug)};
}

}  // namespace specshim
