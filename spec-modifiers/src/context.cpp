// SPDX-License-Identifier: Apache-2.0
#include "specshim/modifiers/modifier.h"

namespace specshim {

std::filesystem::path Context::rootfs(const Spec& spec) const {
  const Json* p = spec.find({"root", "path"});
  if (!p || !p->is_string() || p->get_ref<const std::string&>().empty()) return {};
  std::filesystem::path root(p->get<std::string>());
  return root.is_absolute() ? root : bundle / root;
}

const char* feed_name(Feed feed) {
  switch (feed) {
    case Feed::grants:
      return "the device plugins' grants";
    case Feed::device_requests:
      return "the device requests";
    case Feed::cdi_origins:
      return "the origins of handed-over CDI names";
  }
  return "?";
}

}  // namespace specshim
