// SPDX-License-Identifier: Apache-2.0
// Budget: the time one create may spend talking to the kubelet and plugins.
#pragma once

#include <chrono>

#include "specshim/base/deadline.h"

namespace specshim::kubelet {

// Budget starts its clock when constructed; every call takes its deadline
// from remaining(), so the calls of one create share one total.
class Budget {
 public:
  using Clock = std::chrono::steady_clock;

  // A budget ends by the thread's deadline (specshim/base/deadline.h) when one is
  // set: specshim-nri's create must answer before the runtime gives up on it.
  explicit Budget(std::chrono::milliseconds total) : total_(total), deadline_(deadline::cap(Clock::now() + total)) {}
  // Budget(total, deadline) continues a budget started elsewhere (steady_clock
  // is CLOCK_MONOTONIC, shared by every process on the host).
  Budget(std::chrono::milliseconds total, Clock::time_point deadline) : total_(total), deadline_(deadline) {}

  std::chrono::milliseconds total() const { return total_; }
  Clock::time_point deadline() const { return deadline_; }
  // remaining is the time left, never negative.
  std::chrono::milliseconds remaining() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    return left.count() > 0 ? left : std::chrono::milliseconds(0);
  }
  // expired is true once less than a millisecond is left: no call can be
  // answered in that time, and it keeps "the deadline fired" and "the budget
  // is spent" in agreement across clocks.
  bool expired() const { return remaining().count() == 0; }

 private:
  std::chrono::milliseconds total_;
  Clock::time_point deadline_;
};

}  // namespace specshim::kubelet
