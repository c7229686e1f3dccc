// SPDX-License-Identifier: Apache-2.0
// error_of: assert an exception's type and look at its message, which
// Catch2 v2's CHECK_THROWS_MATCHES cannot do with string matchers:
//   CHECK_THAT(error_of<kubelet::NotFound>([&] { client.get(); }), Contains("pod"));
// described_error: the same for any exception, with its nested causes.
#pragma once

#include <catch2/catch.hpp>
#include <exception>
#include <string>

#include "specshim/base/error.h"

namespace specshim::test {

// error_of runs fn, which must throw E, and returns what(); other exceptions
// propagate and fail the test.
template <typename E, typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  FAIL("expected an exception, none was thrown");
  return {};
}

// described_error runs fn, which must throw, and returns the whole message
// as the shim reports it: describe(e), nested context included.
template <typename Fn>
std::string described_error(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return describe(e);
  }
  FAIL("expected an error, none was thrown");
  return {};
}

}  // namespace specshim::test
