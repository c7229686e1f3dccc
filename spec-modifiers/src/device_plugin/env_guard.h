// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier's env guard (protect-env): the env a
// container's own device plugins set (the kubelet's checkpoint answers for
// its pod UID and container) stays theirs; a later process.env entry that
// gives such a key another value fails the create or is dropped.
#pragma once

#include <set>
#include <string>

#include "device_plugin/target.h"
#include "specshim/base/spec.h"

namespace specshim::device_plugin {

class EnvGuard {
 public:
  // voided are the variables env-devices ends with `<ENV>=void`
  // (ChainPlan::voided_env): that entry is specshim's own, let be.
  explicit EnvGuard(std::set<std::string> voided) : voided_(std::move(voided)) {}

  // guard applies t's protect-env to spec. A container outside CRI, or
  // without a pod UID, has no answers to guard. Returns whether the spec
  // changed; throws Error (fail, or the checkpoint unreadable).
  bool guard(const Target& t, Spec& spec) const;

 private:
  std::set<std::string> voided_;
};

}  // namespace specshim::device_plugin
