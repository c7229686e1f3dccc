// SPDX-License-Identifier: Apache-2.0
// Finding the low-level runtime and handing the process over to it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace specshim::shim {

// find_runtime returns the configured path, else the first runtime on PATH
// that is not specshim itself (so installing specshim as `runc` cannot
// recurse), by kind in runtime::kinds() order: runc, then crun.
// Throws Error with what was searched when nothing is found.
std::string find_runtime(const std::optional<std::string>& configured);

// exec_runtime replaces this process with the runtime: argv[0] becomes the
// runtime's path and argv[1..] are passed byte for byte, with the same
// environment, so exit status and signals belong to the runtime. Throws only
// when execve fails.
[[noreturn]] void exec_runtime(const std::string& path, const std::vector<std::string>& argv);

}  // namespace specshim::shim
