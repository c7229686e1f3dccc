// SPDX-License-Identifier: Apache-2.0
// error_of: assert an exception's type and look at its message, which
// Catch2 v2's CHECK_THROWS_MATCHES cannot do with string matchers:
//   CHECK_THAT(error_of<kubelet::NotFound>([&] { client.get(); }), Contains("pod"));
#pragma once

#include <catch2/catch.hpp>
#include <string>

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

}  // namespace specshim::test
