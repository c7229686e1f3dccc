// SPDX-License-Identifier: Apache-2.0
// env-devices' decision for one entry and one container: the request (the
// variable's last entry, or the /dev/null mounts of the volume-mounts
// strategy) → whom to trust (outside Kubernetes, privileged, a trusted
// namespace) → the grant (the container's checkpoint answers and what
// device-plugin handed it) → a DeviceRequest for cdi, bounded by the grant
// unless the container is trusted.
#pragma once

#include <optional>
#include <string>

#include "specshim/base/spec.h"
#include "specshim/modifiers/env_devices.h"
#include "specshim/modifiers/modifier.h"
#include "specshim/node/kubelet_session.h"
#include "specshim/node/pod_identity.h"

namespace specshim::env_devices {

// decide makes the request of one entry, or nullopt when there is none to
// make; ignored then says why a request the spec makes is not honoured.
// id and target are the container's identity and how messages name it;
// session reads its checkpoint answers. Throws Error for a value it cannot
// read and a checkpoint it cannot read.
std::optional<DeviceRequest> decide(const Entry& e, KubeletSession& session, const Spec& spec, const Context& ctx,
                                    const pod_identity::Identity& id, const std::string& target, std::string& ignored);

// asks tells whether spec asks for devices through entry e: its variable
// lists something (a value specshim cannot read counts), or /dev/null
// mounts stand below its volume-mounts dir.
bool asks(const Entry& e, const Spec& spec);

}  // namespace specshim::env_devices
