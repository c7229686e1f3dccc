// SPDX-License-Identifier: Apache-2.0
// Running code in a running container's mount namespace: a forked child joins
// it (CLONE_NEWNS only) and answers its caller over a pipe (mount_namespace.h).
#include "mount_namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "specshim/base/command.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"

namespace specshim::live {
namespace {

using namespace std::chrono_literals;

constexpr auto kChildTimeout = 10s;
constexpr std::size_t kMaxAnswer = 1 << 20;

// ---- the child in the container's mount namespace ----

// proc_ns opens /proc/PID/ns/NAME.
fs::Fd proc_ns(pid_t pid, const char* name) {
  std::string path = "/proc/" + std::to_string(pid) + "/ns/" + name;
  fs::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("open " + q(path));
  return fd;
}

}  // namespace

std::string in_mount_ns(const Process& process,
                        const std::function<std::string(const std::function<void()>& enter)>& body) {
  pid_t pid = process.pid();
  fs::Fd ns = proc_ns(pid, "mnt");
  process.require_alive();  // after the open: the namespace is the live container process's
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw_errno("pipe");
  fs::Fd rd(pipefd[0]), wr(pipefd[1]);
  pid_t child = ::fork();
  if (child < 0) throw_errno("fork");
  if (child == 0) {
    rd.reset();
    std::string answer;
    try {
      auto enter = [&] {
        if (::setns(ns.get(), CLONE_NEWNS) != 0) throw_errno("enter the mount namespace of pid " + std::to_string(pid));
        if (::chdir("/") != 0) throw_errno("chdir to the container's /");
      };
      answer = "O" + body(enter);
    } catch (const std::exception& e) {
      answer = "E" + describe(e);
    }
    const char* p = answer.data();
    std::size_t left = answer.size();
    while (left > 0) {
      ssize_t n = ::write(wr.get(), p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  wr.reset();
  std::string answer;
  bool done = read_until({{rd.get(), &answer}}, kMaxAnswer, std::chrono::steady_clock::now() + kChildTimeout);
  if (!done) ::kill(child, SIGKILL);
  int status = wait_status(child);
  if (!done) throw Error("no answer from the child in the container within 10 s (killed)");
  if (answer.empty())
    throw Error("the child in the container ended without an answer (status " + std::to_string(status) + ")");
  if (answer[0] == 'E') throw Error(answer.substr(1));
  return answer.substr(1);
}

}  // namespace specshim::live
