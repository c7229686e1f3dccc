// SPDX-License-Identifier: Apache-2.0
// The env-devices modifier's class, private to spec-modifiers: the chain
// builds it through make_env_devices (specshim/modifiers.h), and doctor reads what it
// was built from in ChainFacts (specshim/registry.h), not from the object.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/env_devices.h"
#include "specshim/modifier.h"

namespace specshim::env_devices {

// EnvDevices is the modifier; one object serves one create.
class EnvDevices final : public Modifier {
 public:
  EnvDevices(std::vector<Entry> entries, KubeletSessions& sessions);
  EnvDevices(std::vector<Entry> entries, std::shared_ptr<KubeletSession> session);  // every entry on one kubelet
  ~EnvDevices() override;

  std::string_view name() const override { return "env-devices"; }
  Feeds feeds() const override { return {.produces = {Feed::device_requests}, .consumes = {Feed::grants}}; }
  void apply(Spec& spec, Context& ctx) override;
  std::string last_change() const override;
  bool idempotent() const override { return true; }
  void add_facts(ChainFacts& facts) const override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace specshim::env_devices
