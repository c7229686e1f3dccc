// SPDX-License-Identifier: Apache-2.0
// Pinning a container's process with a pidfd, checked against the runtime's
// state after it was opened.
#include "specshim/live/process.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "specshim/base/error.h"

namespace specshim::live {

bool Process::alive() const {
  if (!fd_) return false;
  pollfd p{*fd_, POLLIN, 0};
  int n = ::poll(&p, 1, 0);
  return n == 0;  // readable (or an error): it has exited
}

void Process::require_alive() const {
  if (!alive()) throw Error("the container's process (pid " + std::to_string(pid_) + ") has exited");
}

Process pin(const std::filesystem::path& runtime, const std::string& root, const ContainerState& state) {
  std::string what = "container " + q(state.id);
  long fd = ::syscall(SYS_pidfd_open, state.pid, 0);
  if (fd < 0) throw_errno(what + ": pidfd_open of its process " + std::to_string(state.pid));
  Process p;
  p.pid_ = state.pid;
  p.fd_ = std::shared_ptr<const int>(new int(static_cast<int>(fd)), [](const int* f) {
    ::close(*f);
    delete f;
  });
  ContainerState again = runtime_state(runtime, root, state.id);
  if (again.pid != state.pid || (again.status != "created" && again.status != "running") || !p.alive())
    throw Error(what + ": its process changed while it was looked up (pid " + std::to_string(state.pid) + ", now " +
                again.status + " with pid " + std::to_string(again.pid) + ")");
  return p;
}

bool has_own_user_namespace(pid_t pid) {
  struct stat mine {
  }, theirs{};
  std::string path = "/proc/" + std::to_string(pid) + "/ns/user";
  if (::stat("/proc/self/ns/user", &mine) != 0) throw_errno("stat `/proc/self/ns/user`");
  if (::stat(path.c_str(), &theirs) != 0) throw_errno("stat " + q(path));
  return mine.st_dev != theirs.st_dev || mine.st_ino != theirs.st_ino;
}

}  // namespace specshim::live
