// SPDX-License-Identifier: Apache-2.0
// Integration-test support: OCI bundles with a busybox-static rootfs, and
// running processes (specshim, runc) with captured output.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "specshim/base/spec.h"

namespace specshim::test {

// ProcessResult is how a child process ended and what it printed.
struct ProcessResult {
  int exit_code = -1;  // exit status, or 128+signal when killed
  std::string out;     // stdout
  std::string err;     // stderr
  int pid = 0;         // the child's pid
  bool signaled = false;
};

// run_process runs argv[0] (a path) with argv and the current environment
// plus env, stdin from /dev/null, and waits for it, killing it after
// timeout_ms (then exit_code is 128+SIGKILL). With capture=false stdout and
// stderr go to /dev/null (for `runc create`, whose container keeps them open).
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                          int timeout_ms = 30000, const std::filesystem::path& cwd = {}, bool capture = true);

// BusyboxBundle is an OCI bundle in dir: rootfs/ holds busybox-static with
// its applets, /etc/passwd and /etc/group with root only, /tmp; spec() starts
// from `runc spec` with no terminal. Call save() after changing spec().
class BusyboxBundle {
 public:
  explicit BusyboxBundle(const std::filesystem::path& dir);
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path rootfs() const { return dir_ / "rootfs"; }
  Json& spec() { return spec_; }
  void set_args(const std::vector<std::string>& args);  // process.args
  void set_user(unsigned uid, unsigned gid);            // process.user
  void save() const;                                    // writes config.json

 private:
  std::filesystem::path dir_;
  Json spec_;
};

// Shim runs the real specshim binary against real runc, with its own runc
// --root and a specshim config file, as containerd would.
class Shim {
 public:
  // state_dir holds runc's --root and the config file.
  Shim(const std::filesystem::path& state_dir, const std::string& config_toml);

  // run: `specshim --root R --log B/log.json --log-format json run --bundle B ID`;
  // runc runs the container in the foreground, so out is the container's stdout
  // and exit_code its exit status.
  ProcessResult run(const BusyboxBundle& bundle, const std::string& id) const;
  // runc verbs through specshim with the same global flags (create, start,
  // state, kill, delete ...).
  // capture=false for create: the created container would hold the pipes open.
  ProcessResult call(const BusyboxBundle& bundle, const std::vector<std::string>& verb_and_args,
                     bool capture = true) const;
  // log returns the bundle's --log file (empty when absent).
  static std::string log(const BusyboxBundle& bundle);
  const std::filesystem::path& config_path() const { return config_; }
  std::map<std::string, std::string> env() const { return {{"SPECSHIM_CONFIG", config_.string()}}; }

 private:
  std::filesystem::path root_;
  std::filesystem::path config_;
};

// unique_id returns a container id unique to this process and call.
std::string unique_id(const std::string& prefix);

}  // namespace specshim::test
