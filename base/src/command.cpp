// SPDX-License-Identifier: Apache-2.0
// run_command: posix_spawn, a poll loop over the output pipes with a
// deadline, SIGKILL when it passes, and waitpid.
#include "specshim/base/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"

extern char** environ;

namespace specshim {
namespace {

constexpr std::size_t kMaxOut = 1 << 20;
constexpr std::size_t kMaxErr = 64 << 10;

pid_t spawn(const std::vector<std::string>& argv, int out_fd, int err_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  bool path = argv[0].find('/') != std::string::npos;  // else looked up in PATH (systemctl)
  // The child starts with no signal blocked, whatever this process blocks
  // (reconcile --watch blocks SIGTERM to read it from a signalfd).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  int rc = (path ? ::posix_spawn : ::posix_spawnp)(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw_errno("run `" + argv[0] + "`", rc);
  return pid;
}

}  // namespace

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

bool read_until(std::vector<std::pair<int, std::string*>> fds, std::size_t cap,
                std::chrono::steady_clock::time_point deadline) {
  std::vector<pollfd> p;
  for (auto& [fd, out] : fds) p.push_back({fd, POLLIN, 0});
  std::size_t open = p.size();
  char buf[8192];
  while (open > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    int n = ::poll(p.data(), p.size(), static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(p[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got > 0) {
        std::string& out = *fds[i].second;
        if (out.size() < cap) out.append(buf, static_cast<std::size_t>(got));
      } else {
        p[i].fd = -1;
        --open;
      }
    }
  }
  return true;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, Stderr stderr_to) {
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
  fs::Fd out_rd(out_pipe[0]), out_wr(out_pipe[1]);
  fs::Fd err_rd, err_wr;
  if (stderr_to == Stderr::separate) {
    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
    err_rd = fs::Fd(err_pipe[0]);
    err_wr = fs::Fd(err_pipe[1]);
  }
  pid_t pid = spawn(argv, out_wr.get(), err_wr ? err_wr.get() : out_wr.get());
  out_wr.reset();
  err_wr.reset();
  CommandResult r;
  std::string err;
  std::vector<std::pair<int, std::string*>> fds = {{out_rd.get(), &r.out}};
  if (err_rd) fds.push_back({err_rd.get(), &err});
  bool done = read_until(std::move(fds), kMaxOut, std::chrono::steady_clock::now() + timeout);
  if (!done) ::kill(pid, SIGKILL);
  int status = wait_status(pid);
  r.timed_out = !done;
  r.err = err.substr(0, kMaxErr);
  r.exit_code = done && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace specshim
