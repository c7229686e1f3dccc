// SPDX-License-Identifier: Apache-2.0
// lock_within (fs.h): flock on an open file, retried until a time limit or
// the create's deadline.
#include <sys/file.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <string>

#include "specshim/base/deadline.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"

namespace specshim::fs {

void lock_within(int fd, int operation, std::chrono::seconds limit, const std::string& path,
                 const std::string& holder) {
  auto start = std::chrono::steady_clock::now();
  auto deadline = deadline::cap(start + limit);
  timespec pause{0, 2'000'000};
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) throw_errno("lock `" + path + "`");
    if (std::chrono::steady_clock::now() > deadline) {
      if (deadline < start + limit) {
        auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - start);
        throw Error("lock `" + path + "`: " + holder + " has held it for " + std::to_string(waited.count()) +
                    " ms, and the create's answer is due");
      }
      throw Error("lock `" + path + "`: " + holder + " has held it for " + std::to_string(limit.count()) + " s");
    }
    ::nanosleep(&pause, nullptr);
    pause.tv_nsec = std::min<long>(pause.tv_nsec * 2, 50'000'000);
  }
}

}  // namespace specshim::fs
