// SPDX-License-Identifier: Apache-2.0
#include "specshim/node/grant.h"

#include "specshim/node/cdi.h"

namespace specshim {

Grant granted(const kubelet::AllocateResponse& answer, std::string_view resource, std::string_view source) {
  Grant g;
  g.resource = resource;
  g.source = source;
  g.envs.assign(answer.envs.begin(), answer.envs.end());
  for (const auto& m : answer.mounts) g.mounts.push_back(m.container_path);
  g.cdi_devices = answer.cdi_devices;
  for (const auto& [key, value] : answer.annotations) {
    if (key.rfind(cdi::kAnnotationPrefix, 0) != 0) continue;
    for (std::size_t start = 0; start <= value.size();) {
      std::size_t comma = value.find(',', start);
      g.cdi_devices.push_back(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return g;
}

}  // namespace specshim
