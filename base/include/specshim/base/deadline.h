// SPDX-License-Identifier: Apache-2.0
// The time by which a create must be answered. specshim-nri answers each
// CreateContainer within the runtime's plugin request timeout (less a
// margin): a late answer makes the runtime drop the plugin and create the
// following containers without the chain. The plugin sets the deadline for
// the thread that serves the request, and every wait on a create's path
// ends by then: the kubelet budget (kubelet::Budget), the helper's grace,
// file locks (fs::lock_within). The shim, which nothing times, sets none.
#pragma once

#include <chrono>
#include <optional>

namespace specshim::deadline {

using Clock = std::chrono::steady_clock;

// Scope sets the calling thread's deadline until it is destroyed; an outer
// scope's earlier deadline stays in force.
class Scope {
 public:
  explicit Scope(Clock::time_point by);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  std::optional<Clock::time_point> outer_;
};

// current is the thread's deadline, when a Scope set one.
std::optional<Clock::time_point> current();

// cap is the earlier of t and the thread's deadline.
Clock::time_point cap(Clock::time_point t);

}  // namespace specshim::deadline
