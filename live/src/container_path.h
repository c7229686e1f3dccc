// SPDX-License-Identifier: Apache-2.0
// Resolving a container path below the container's root, from inside its
// mount namespace, and making what is missing on the way (container_path.cpp).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "specshim/base/fs.h"

namespace specshim::live {

// Parent is the container path's directory, opened inside the container's
// root, and the dirs made on the way there.
struct Parent {
  fs::Fd fd;  // empty when missing (and not created)
  std::string name;
  std::vector<std::string> made;  // "dev/dri", outermost first
};

// as_owner runs a call that creates a file in dirfd. In a user-namespaced
// container's own filesystems (its /dev tmpfs) a new file's owner must be
// mapped there and host root is not (EOVERFLOW): the call is then retried
// with the directory owner's fsuid/fsgid, which the container maps.
// CAP_SYS_ADMIN stays; the fs capabilities come back with fsuid 0.
int as_owner(int dirfd, const std::function<int()>& create);

// components splits an absolute path into the names after its leading "/".
std::vector<std::string> components(const std::string& path);

// remove_dirs removes the directories made (paths below "/"), innermost
// first, each only when empty; failures are ignored.
void remove_dirs(const std::vector<std::string>& made);

// open_parent resolves the parent of path below "/" (the container's root
// after enter) with RESOLVE_IN_ROOT: no "..", symlink or magic link leads
// out of it. With create, missing directories are made 0755.
Parent open_parent(const std::string& path, bool create);

}  // namespace specshim::live
