// SPDX-License-Identifier: Apache-2.0
// FileOwner: who a file specshim writes belongs to, when not root.
#pragma once

#include <sys/types.h>

namespace specshim {

// FileOwner is the owner given to a written file: a passwd copy for a
// user-namespaced container belongs to the host ids of its root.
struct FileOwner {
  uid_t uid = 0;
  gid_t gid = 0;
  bool operator==(const FileOwner&) const = default;
};

}  // namespace specshim
