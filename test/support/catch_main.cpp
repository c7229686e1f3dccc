// SPDX-License-Identifier: Apache-2.0
// Catch2's main, for cross builds (test/CMakeLists.txt says why).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
