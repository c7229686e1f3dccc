// SPDX-License-Identifier: Apache-2.0
#include "device_plugin/target.h"

#include <algorithm>

#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/base/text.h"

namespace specshim::device_plugin {

std::string Target::plugin_dir() const {
  return kubelet::device_plugin_dir(config.kubelet_root).string();
}

std::string Target::pod_resources_socket() const {
  return kubelet::pod_resources_socket(config.kubelet_root).string();
}

std::string Target::socket_of(const Resource& r) const {
  if (r.socket.empty()) return "discovered in " + plugin_dir();
  return r.socket[0] == '/' ? r.socket : plugin_dir() + "/" + r.socket;
}

std::vector<const Resource*> Target::with(Provider p) const {
  std::vector<const Resource*> out;
  for (const auto& r : config.resources)
    if (r.has(p)) out.push_back(&r);
  return out;
}

const kubelet::PodResources& Target::pod() const {
  if (id.pod.empty()) throw kubelet::NotFound("no pod is known for this container");
  return session.pod_resources(id.pod.ns, id.pod.name);
}

void Target::settle(const std::vector<const Resource*>& involved, const std::string& what, const std::string& socket,
                    const std::string& cause) const {
  std::string msg = what + " for " + who + " (socket " + socket + "): " + cause;
  bool fail = std::any_of(involved.begin(), involved.end(), [](auto* r) { return r->on_error == OnError::fail; });
  if (fail) throw Error(msg);
  log::warn("device-plugin: skipped (on-error = skip): {}", msg);
}

std::string label(const std::string& resource, const std::vector<std::string>& ids) {
  return "`" + resource + "` " + join_some(ids, ",");
}

}  // namespace specshim::device_plugin
