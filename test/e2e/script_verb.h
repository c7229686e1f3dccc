// SPDX-License-Identifier: Apache-2.0
// The boxes a script starts and stops (systemd-node/node.sh for
// systemd_node.h, devbox/devbox.sh for devbox.h): a command run inside one
// through its script's verb, and the error naming it when it fails.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "container.h"

namespace specshim::e2e {

// script_verb runs `bash SCRIPT VERB DIR ARGV...`.
test::ProcessResult script_verb(const std::string& script, const std::string& verb, const std::filesystem::path& dir,
                                const std::vector<std::string>& argv, int timeout_ms);

// succeeded returns r's stdout, or throws naming where ("the node"), argv,
// its exit status and its output.
std::string succeeded(const test::ProcessResult& r, const std::string& where, const std::vector<std::string>& argv);

}  // namespace specshim::e2e
