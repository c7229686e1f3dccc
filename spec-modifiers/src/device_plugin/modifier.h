// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier's class, private to spec-modifiers: the chain
// builds it through make_device_plugin (specshim/modifiers/factories.h); doctor reads its table
// with read_table (specshim/modifiers/device_plugin.h), not from the object.
//
// Its parts, one file each in this folder:
//   target     one create as the parts see it, and on-error (settle)
//   requests   the providers: what the container asks for
//   resolver   where each answer comes from, memoised for the create
//   answer     checking an answer, and merging it into the spec
//   env_guard  protect-env
//   dra        DRA claims handed to a sibling
//   config     [device-plugin] and [[device-plugin.resources]]
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "device_plugin/dra.h"
#include "device_plugin/env_guard.h"
#include "device_plugin/requests.h"
#include "device_plugin/resolver.h"
#include "device_plugin/target.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/modifiers/modifier.h"

namespace specshim::device_plugin {

// DevicePlugin is the modifier. One object serves one create (every pass of
// its chain): its resolver memoises what it resolved, so no (resource, IDs)
// is looked up or allocated twice, and one budget covers all its kubelet
// calls.
//
// Each pass reads the requests present in the spec when it starts; requests
// that the answers add (a spot plugin's annotation naming a real GPU) are
// read in the next pass, so a chain of references takes one pass per link.
class DevicePlugin final : public Modifier {
 public:
  DevicePlugin(Config config, ClientFactory make_client, NodeLookup lookup = stat_host_node);
  // voided_env names the variables env-devices ends with `<ENV>=void`
  // (ChainPlan::voided_env): protect-env lets that entry be.
  DevicePlugin(Config config, std::shared_ptr<KubeletSession> session, NodeLookup lookup = stat_host_node,
               std::set<std::string> voided_env = {});

  std::string_view name() const override { return "device-plugin"; }
  Feeds feeds() const override { return {.produces = {Feed::grants, Feed::cdi_origins}}; }
  void apply(Spec& spec, Context& ctx) override;
  std::string last_change() const override;

  // client_made tells whether the factory was called (tests of the hot path).
  bool client_made() const;

 private:
  // merge resolves req and merges its answer (or its parts') into spec.
  void merge(const Target& t, Spec& spec, Context& ctx, const Request& req);

  const Config config_;
  std::shared_ptr<KubeletSession> session_;
  Resolver resolver_;
  EnvGuard guard_;
  DraHandOver dra_;
  std::vector<std::string> changes_;  // what the last apply merged
};

}  // namespace specshim::device_plugin
