// SPDX-License-Identifier: Apache-2.0
// The two bits of I/O several checks share: running a probe command with a
// deadline, and knocking on a unix socket.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "doctor/doctor.h"
#include "specshim/base/command.h"
#include "specshim/base/error.h"

namespace specshim::shim::doctor {

std::string connect_unix(const std::filesystem::path& socket) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket.native().size() >= sizeof(addr.sun_path)) return "path too long for a unix socket";
  std::memcpy(addr.sun_path, socket.c_str(), socket.native().size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return std::strerror(errno);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  int err = errno;
  ::close(fd);
  // EAGAIN: the listener's backlog is full, but something is listening.
  if (rc == 0 || err == EAGAIN) return {};
  return std::strerror(err);
}

Output probe(const std::vector<std::string>& argv) {
  constexpr auto kTimeout = std::chrono::milliseconds(5000);
  Output out;
  try {
    CommandResult r = run_command(argv, kTimeout, Stderr::merged);
    out.exit_code = r.exit_code;
    out.text = r.out.substr(0, 65536);
    if (r.timed_out) out.text += "(no answer within " + std::to_string(kTimeout.count()) + " ms)";
  } catch (const Error& e) {
    out.text = e.what();
  }
  return out;
}

}  // namespace specshim::shim::doctor
