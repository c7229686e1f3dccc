// SPDX-License-Identifier: Apache-2.0
// Target is one create as the device-plugin modifier's parts see it: the
// table the modifier was built from, the chain's kubelet session, and the
// container (its pod identity, and how messages name it), made anew at each
// apply. It also holds the one failure policy they all share (settle).
#pragma once

#include <string>
#include <vector>

#include "specshim/kubelet/client.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/node/kubelet_session.h"
#include "specshim/node/pod_identity.h"

namespace specshim::device_plugin {

struct Target {
  const Config& config;
  KubeletSession& session;
  pod_identity::Identity id = {};
  std::string who = {};  // "container `main` of pod `ns/p`"

  kubelet::KubeletClient& kubelet() const { return session.client(); }
  const kubelet::Budget& budget() const { return session.budget(); }

  std::string plugin_dir() const;
  std::string pod_resources_socket() const;
  // socket_of says where r's plugin listens, for messages.
  std::string socket_of(const Resource& r) const;
  // with lists the configured resources p serves, in file order.
  std::vector<const Resource*> with(Provider p) const;
  // pod asks PodResources once per create (KubeletSession). Throws
  // kubelet::Error, NotFound when no pod is known.
  const kubelet::PodResources& pod() const;

  // settle applies the strictest on-error of the resources involved: fail
  // throws naming the container, the pod, what was resolved, the socket and
  // the cause; skip leaves a warning in the debug log.
  void settle(const std::vector<const Resource*>& involved, const std::string& what, const std::string& socket,
              const std::string& cause) const;
};

// label names a request in messages: `nvidia.com/gpu` GPU-1,GPU-2. A
// direct request's ids are the tenant's: only the first few are named.
std::string label(const std::string& resource, const std::vector<std::string>& ids);

}  // namespace specshim::device_plugin
