// SPDX-License-Identifier: Apache-2.0
// Running code in a running container's mount namespace from a forked child
// (mount_namespace.cpp).
#pragma once

#include <functional>
#include <string>

#include "specshim/live/process.h"

namespace specshim::live {

// in_mount_ns forks a child that runs body; body opens what it needs on the
// host, then calls enter() to join pid's mount namespace. The string body
// returns (or the message of what it threw) comes back over a pipe.
std::string in_mount_ns(const Process& process,
                        const std::function<std::string(const std::function<void()>& enter)>& body);

}  // namespace specshim::live
