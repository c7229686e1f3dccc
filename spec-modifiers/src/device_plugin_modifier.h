// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier's class, private to spec-modifiers: the chain
// builds it through make_device_plugin (specshim/modifiers.h), and doctor reads what it
// was built from in ChainFacts (specshim/registry.h), not from the object.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/device_plugin.h"
#include "specshim/modifier.h"

namespace specshim::device_plugin {

// DevicePlugin is the modifier. One object serves one create (every pass of
// its chain): it memoises what it resolved, so no (resource, IDs) is looked
// up or allocated twice, and one budget covers all its kubelet calls.
class DevicePlugin final : public Modifier {
 public:
  DevicePlugin(Config config, ClientFactory make_client, NodeLookup lookup = stat_host_node);
  // voided_env names the variables env-devices ends with `<ENV>=void`
  // (ChainPlan::voided_env): protect-env lets that entry be.
  DevicePlugin(Config config, std::shared_ptr<KubeletSession> session, NodeLookup lookup = stat_host_node,
               std::set<std::string> voided_env = {});
  ~DevicePlugin() override;

  std::string_view name() const override { return "device-plugin"; }
  Feeds feeds() const override { return {.produces = {Feed::grants, Feed::cdi_origins}}; }
  void apply(Spec& spec, Context& ctx) override;
  std::string last_change() const override;

  // client_made tells whether the factory was called (tests of the hot path).
  bool client_made() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace specshim::device_plugin
