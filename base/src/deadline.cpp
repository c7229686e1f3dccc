// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/deadline.h"

#include <algorithm>

namespace specshim::deadline {
namespace {

thread_local std::optional<Clock::time_point> due;

}  // namespace

Scope::Scope(Clock::time_point by) : outer_(due) {
  due = outer_ ? std::min(*outer_, by) : by;
}

Scope::~Scope() {
  due = outer_;
}

std::optional<Clock::time_point> current() {
  return due;
}

Clock::time_point cap(Clock::time_point t) {
  return due ? std::min(t, *due) : t;
}

}  // namespace specshim::deadline
