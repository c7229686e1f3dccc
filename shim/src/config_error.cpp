// SPDX-License-Identifier: Apache-2.0
#include "config_error.h"

#include "specshim/modifiers/create.h"
#include "specshim/node/pod_identity.h"

namespace specshim::shim {

std::optional<std::string> passes_unloaded_config(const std::filesystem::path& bundle, OnConfigError policy,
                                                  std::string_view container_id, std::string_view error) {
  ContainerKind kind = ContainerKind::unknown;
  try {
    create::BundleDir dir(bundle);
    kind = pod_identity::kind_of(dir.read());
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string id(container_id);
  if (kind == ContainerKind::sandbox)
    return "specshim: sandbox " + id + " started with its spec untouched; its containers' creates fail until " +
           "the config loads: " + std::string(error);
  if (policy == OnConfigError::pass)
    return "specshim: container " + id +
           " started WITHOUT specshim's chain ([policy] on-config-error = \"pass\"): " + std::string(error);
  return std::nullopt;
}

}  // namespace specshim::shim
