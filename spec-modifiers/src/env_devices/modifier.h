// SPDX-License-Identifier: Apache-2.0
// The env-devices modifier's class, private to spec-modifiers: the chain
// builds it through make_env_devices (specshim/modifiers/factories.h); doctor reads what it
// is built from in chain_facts (specshim/modifiers/chain_facts.h), not from the object.
//
// Its parts, one file each in this folder:
//   grammar   how each vendor's runtime reads its variable, and the vendor table
//   config    the [[env-devices]] entries
//   grant     what a plugin's answer granted, as CDI names; the volume-mounts names
//   decision  the request, whom to trust, the grant's bound
//   after     what the variable says once the devices are handed to cdi
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specshim/modifiers/env_devices.h"
#include "specshim/modifiers/modifier.h"
#include "specshim/node/kubelet_session.h"

namespace specshim::env_devices {

// EnvDevices is the modifier; one object serves one create. The request is
// decided once per create, on the spec as containerd wrote it: the `void`
// appended here must not read, in the next pass, as the container asking
// for nothing.
class EnvDevices final : public Modifier {
 public:
  EnvDevices(std::vector<Entry> entries, KubeletSessions& sessions);
  EnvDevices(std::vector<Entry> entries, std::shared_ptr<KubeletSession> session);  // every entry on one kubelet

  std::string_view name() const override { return "env-devices"; }
  Feeds feeds() const override { return {.produces = {Feed::device_requests}, .consumes = {Feed::grants}}; }
  void apply(Spec& spec, Context& ctx) override;
  std::string last_change() const override;
  bool idempotent() const override { return true; }

 private:
  // decide_all decides every entry's request, on the first apply.
  void decide_all(const Spec& spec, const Context& ctx);

  std::vector<Entry> entries_;
  std::vector<std::shared_ptr<KubeletSession>> sessions_;                       // per entry
  std::optional<std::vector<std::pair<const Entry*, DeviceRequest>>> decided_;  // on the first apply
  std::vector<const Entry*> inert_;                                             // entries whose request was ignored
  std::vector<std::string> changes_;
};

}  // namespace specshim::env_devices
