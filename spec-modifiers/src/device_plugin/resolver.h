// SPDX-License-Identifier: Apache-2.0
// The device-plugin modifier's resolver: where the answer to a request comes
// from (the kubelet's checkpoint, or Allocate where allowed) and what
// happens when there is none (on-error). It memoises what it resolved for
// the whole create, so no (resource, IDs) is looked up or allocated twice
// across the chain's passes.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>

#include "device_plugin/requests.h"
#include "device_plugin/target.h"
#include "specshim/modifiers/device_plugin.h"
#include "specshim/node/grant.h"

namespace specshim::device_plugin {

// Resolution is what became of a request.
struct Resolution {
  const Resource* resource = nullptr;
  std::string label = {};
  std::optional<PreparedAnswer> answer = {};  // nullopt: skipped
  Grant grant = {};                           // what the answer granted (Context::grants)
  std::string source = {};                    // "the checkpoint" or "Allocate"
  std::string how = {};                       // provider and chain, for messages
  Via via = {};                               // the chain of requests, this one last
};

class Resolver {
 public:
  explicit Resolver(NodeLookup lookup) : lookup_(std::move(lookup)) {}

  // resolve returns the resolution of req, finding its answer the first
  // time: the checkpoint's answer for exactly these devices, else Allocate
  // when the resource allows it and allow_allocate (not a dry-run). An
  // answer that fails its checks, or lacks a require-env key, settles or
  // throws before the spec is touched. nullptr: req is a pod-sync set that
  // no stored answer covers and that may not be allocated; merge its parts.
  const Resolution* resolve(const Target& t, const Request& req, bool allow_allocate);

  // vouching finds the chain of the resolved answer whose annotation
  // key=value is exactly this: such a request comes from a plugin, not from
  // the tenant. nullptr: none.
  const Via* vouching(const std::string& key, const std::string& value) const;

 private:
  const Resolution* remember(const std::string& key, Resolution res);

  NodeLookup lookup_;
  std::map<std::string, std::size_t> memo_;  // sorted (resource, IDs) -> index in resolved_
  std::deque<Resolution> resolved_;          // in resolution order; references stay valid
};

}  // namespace specshim::device_plugin
