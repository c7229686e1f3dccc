// SPDX-License-Identifier: Apache-2.0
// A container as its low-level runtime reports it: `state` and `list`.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace specshim::live {

// ContainerState is what `<runtime> --root ROOT state ID` says.
struct ContainerState {
  std::string id;
  std::string status;  // "created", "running", "stopped", "paused"
  pid_t pid = 0;
  std::filesystem::path bundle;
};
// runtime_state runs the runtime's `state` (without --root when root is
// empty) and parses its JSON. Throws Error naming the container and quoting
// the runtime's own message.
ContainerState runtime_state(const std::filesystem::path& runtime, const std::string& root, const std::string& id);

// runtime_list runs the runtime's `list --format json` (without --root when
// root is empty): every container it knows, in its order. Throws Error
// quoting the runtime's own message.
std::vector<ContainerState> runtime_list(const std::filesystem::path& runtime, const std::string& root);

// require_live throws Error naming the container unless it is created or
// running (a stopped container has no namespaces to enter).
void require_live(const ContainerState& state);

}  // namespace specshim::live
