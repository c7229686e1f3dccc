// SPDX-License-Identifier: Apache-2.0
#include "config_file.h"

#include "specshim/cdi.h"

namespace specshim::shim {

ConfigFile read_config_file(const std::filesystem::path& file) {
  return read_config_file(config::Document::load(file));
}

ConfigFile read_config_file(config::Document doc) {
  auto root = doc.root();
  Settings settings = read_settings(root);
  Chain chain = build_chain(root);
  auto cdi = root.section("cdi");
  auto cdi_dirs = cdi::read_spec_dirs(cdi);
  auto hotplug_table = root.section("hotplug");
  hotplug::Config hotplug = hotplug::read_config(hotplug_table);
  root.finish();
  return ConfigFile{std::move(doc), std::move(settings), std::move(chain), std::move(cdi_dirs), std::move(hotplug)};
}

}  // namespace specshim::shim
