// SPDX-License-Identifier: Apache-2.0
#include "background.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace specshim::test {

Background::Background(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawnattr_t attr;
  ::posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = ::posix_spawn(&pid_, cargv[0], &actions, &attr, cargv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
}

Background::~Background() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::string Background::out() const {
  return read_file(dir_ / "stdout");
}

std::string Background::err() const {
  return read_file(dir_ / "stderr");
}

bool Background::running() const {
  if (pid_ <= 0) return false;
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
}

ProcessResult Background::stop(int sig, int timeout_ms) {
  ProcessResult r;
  r.pid = pid_;
  if (pid_ <= 0) throw std::logic_error("Background::stop: already stopped");
  ::kill(pid_, sig);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  bool killed = false;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      killed = true;
      break;
    }
    timespec pause{0, 10'000'000};
    ::nanosleep(&pause, nullptr);
  }
  pid_ = -1;
  r.signaled = killed || WIFSIGNALED(status);
  r.exit_code = r.signaled ? 128 + (killed ? SIGKILL : WTERMSIG(status)) : WEXITSTATUS(status);
  r.out = out();
  r.err = err();
  return r;
}

}  // namespace specshim::test
