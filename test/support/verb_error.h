// SPDX-License-Identifier: Apache-2.0
// one_line_error: an own verb (attach, detach, reconcile, diagnose) that
// refuses exits with its code and says why in exactly one line on stderr.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "container.h"

namespace specshim::test {

inline void one_line_error(const ProcessResult& r, const std::string& want, int exit_code = 1) {
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == exit_code);
  CHECK_THAT(r.err, Catch::Contains(want));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace specshim::test
