// SPDX-License-Identifier: Apache-2.0
// The object the tests' precompiled header is built with (test/CMakeLists.txt).
