// SPDX-License-Identifier: Apache-2.0
// A process started without waiting for it (a long-running verb such as
// `specshim reconcile --watch`): what it prints is read back while it runs,
// and stop() signals it and collects how it ended.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "container.h"
#include "tempdir.h"

namespace specshim::test {

// Background runs argv[0] (a path) with argv, stdin from /dev/null, stdout
// and stderr into files of its own (no pipe to keep drained), default signal
// dispositions and an empty signal mask. The destructor kills (SIGKILL) and
// reaps it when stop() was not called.
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv);
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  pid_t pid() const { return pid_; }
  // out and err are what it printed so far.
  std::string out() const;
  std::string err() const;
  // running is whether it has not exited yet (it is not reaped here).
  bool running() const;
  // stop sends sig, waits at most timeout_ms for the exit (then SIGKILL),
  // and returns its exit status (128+signal when a signal ended it) and all
  // it printed.
  ProcessResult stop(int sig = SIGTERM, int timeout_ms = 10000);

 private:
  TempDir dir_;
  pid_t pid_ = -1;
};

}  // namespace specshim::test
