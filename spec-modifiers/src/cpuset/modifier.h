// SPDX-License-Identifier: Apache-2.0
// The cpuset modifier's class, private to spec-modifiers: the chain
// builds it through make_cpuset (specshim/modifiers/factories.h); doctor reads its table
// with read_table (specshim/modifiers/cpuset.h), not from the object.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/modifiers/cpuset.h"
#include "specshim/modifiers/modifier.h"

namespace specshim::cpuset {

// Cpuset is the modifier. One object serves one create (every pass of its
// chain): PodResources is asked at most once, within one budget.
class Cpuset final : public Modifier {
 public:
  Cpuset(Config config, device_plugin::ClientFactory make_client);
  Cpuset(Config config, std::shared_ptr<KubeletSession> session);

  std::string_view name() const override { return "cpuset"; }
  void apply(Spec& spec, Context& ctx) override;
  std::string last_change() const override;

  // client_made tells whether the factory was called (tests of the hot path).
  bool client_made() const;

 private:
  const Config config_;
  std::shared_ptr<KubeletSession> session_;
  std::vector<std::string> changes_;  // what the last apply set
};

}  // namespace specshim::cpuset
