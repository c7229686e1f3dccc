// SPDX-License-Identifier: Apache-2.0
#include "attach.h"
#include "runtime.h"
#include "settings.h"
#include "specshim/cdi.h"
#include "specshim/hotplug.h"

namespace specshim::shim::attach {

Setup read_setup(const config::Document& doc, const std::string& root) {
  auto section = doc.root();
  Settings settings = read_settings(section);
  Setup s;
  s.runtime = find_runtime(settings.runtime_path);
  s.root = root;
  auto cdi = section.section("cdi");
  s.cdi_dirs = cdi::read_spec_dirs(cdi);
  s.config_file = doc.file();
  return s;
}

std::unique_ptr<Bound> bound_of(const config::Document& doc, const std::string& proc) {
  auto root = doc.root();
  auto section = root.section("hotplug");
  if (hotplug::read_config(section).bound == hotplug::Bound::none) return nullptr;
  auto sources = pod_allocation::read_sources(root, proc);
  auto lookup = pod_allocation::helper_lookup(sources);
  return std::make_unique<Bound>(std::move(sources), std::move(lookup));
}

}  // namespace specshim::shim::attach
