// SPDX-License-Identifier: Apache-2.0
#include "attach.h"
#include "runtime.h"
#include "specshim/modifiers/allocation_sources.h"

namespace specshim::shim::attach {

using namespace live::attach;

Setup setup_of(const ConfigFile& config, const std::string& root) {
  return Setup{find_runtime(config.settings.runtime_path), root, config.cdi_dirs, config.doc.file(),
               config.nri.state_dir};
}

std::unique_ptr<pod_allocation::Node> bound_of(const ConfigFile& config, const std::string& proc) {
  if (config.hotplug.bound == hotplug::Bound::none) return nullptr;
  auto root = config.doc.root();
  auto sources = allocation_sources(root, proc);
  auto lookup = pod_allocation::helper_lookup(sources);
  return std::make_unique<pod_allocation::Node>(std::move(sources), std::move(lookup));
}

}  // namespace specshim::shim::attach
