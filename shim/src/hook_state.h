// SPDX-License-Identifier: Apache-2.0
// What an OCI runtime hands a hook on stdin: the container's state (id,
// bundle, ...). specshim runs as two hooks: `specshim nri-hook` (nri_hook.cpp)
// and the stand-in for a vendor's own hook (legacy_hook.cpp).
#pragma once

#include <string>

namespace specshim::shim {

// HookState is what a hook needs of the state.
struct HookState {
  std::string id = "?";  // "?" when the state names none
  std::string bundle;    // an absolute path
};

// read_hook_state reads and parses the state from stdin (at most 1 MiB).
// Throws Error when it is not JSON or its bundle is not an absolute path.
HookState read_hook_state();

}  // namespace specshim::shim
