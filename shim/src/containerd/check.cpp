// SPDX-License-Identifier: Apache-2.0
// Check before restart: the node's containerd (chroot HOST_ROOT containerd,
// or --check-cmd) reads the changed configuration before anything restarts
// it; when it rejects it, the files come back byte for byte. And the
// restart itself. Every command runs with a deadline (install.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "containerd/install.h"
#include "specshim/base/command.h"

namespace specshim::shim::containerd {
namespace {

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

// node_root: the host root as chroot takes it ("/" was shortened to "").
std::string node_root(const Run& run) {
  return run.opt.host_root.empty() ? "/" : run.opt.host_root;
}

std::vector<std::string> node_containerd(const Run& run, std::vector<std::string> args) {
  std::vector<std::string> argv = run.opt.check_cmd.empty()
                                      ? std::vector<std::string>{"chroot", node_root(run), "containerd"}
                                      : words(run.opt.check_cmd);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::string check_command(const Run& run) {
  return run.opt.check_cmd.empty() ? "chroot " + node_root(run) + " containerd" : run.opt.check_cmd;
}

// run_quiet runs argv; a command that cannot start counts as failed (exit 127).
CommandResult run_quiet(const std::vector<std::string>& argv, int seconds, Stderr how = Stderr::separate) {
  if (argv.empty()) return CommandResult{};
  try {
    return run_command(argv, std::chrono::seconds(seconds), how);
  } catch (const Error& e) {
    CommandResult r;
    r.exit_code = 127;
    r.err = e.what();
    return r;
  }
}

std::string chomp(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

std::optional<std::string> version_output(const Run& run) {
  auto argv = run.opt.version_cmd.empty()
                  ? std::vector<std::string>{"chroot", node_root(run), "containerd", "--version"}
                  : words(run.opt.version_cmd);
  auto r = run_quiet(argv, kVersionSeconds);
  if (r.exit_code != 0) return std::nullopt;
  return r.out;
}

Snapshot snapshot_config(const Run& run) {
  Snapshot snap;
  snap.files = {run.host(run.opt.containerd_config), run.host(kDropinRel)};
  for (const auto& f : snap.files) {
    snap.bytes.push_back(exists(f) ? read_file(f) : std::nullopt);
    snap.modes.push_back(exists(f) ? mode_of(f) : 0644);
    for (std::string d = cc::dirname(f); !is_dir(d); d = cc::dirname(d)) snap.new_dirs.push_back(d);
  }
  return snap;
}

void restore_config(const Run& run, const Snapshot& snap) {
  for (std::size_t i = 0; i < snap.files.size(); ++i) {
    if (snap.bytes[i]) {
      replace_file(snap.files[i], *snap.bytes[i], snap.modes[i]);
    } else {
      std::remove(snap.files[i].c_str());
    }
  }
  for (const auto& b : run.backups) std::remove(b.c_str());
  for (const auto& d : snap.new_dirs) ::rmdir(d.c_str());
}

void check_config(Run& run, const Snapshot& snap) {
  std::string what = check_command(run) + " --config " + run.opt.containerd_config + " config dump";
  if (run_quiet(node_containerd(run, {"--version"}), kVersionSeconds).exit_code != 0) {
    run.log("cannot run the node's containerd (" + check_command(run) +
            " --version failed): the changed configuration is not checked before the restart");
    return;
  }
  auto r = run_quiet(node_containerd(run, {"--config", run.opt.containerd_config, "config", "dump"}), kCheckSeconds);
  if (r.exit_code == 0) {
    run.log("the node's containerd reads the changed configuration (" + what + ")");
    return;
  }
  restore_config(run, snap);
  std::string err = chomp(r.timed_out ? r.err + "\n(timed out after " + std::to_string(kCheckSeconds) + " s)" : r.err);
  std::vector<std::string> kept;
  for (const auto& line : cc::lines(err + "\n"))
    if (line.find("level=warning") == std::string::npos && line.find("level=info") == std::string::npos)
      kept.push_back(line);
  std::string errs = chomp(join(kept, "\n"));
  throw Error("the node's containerd rejects the changed configuration (" + what + "): " + (errs.empty() ? err : errs) +
              "\n" + run.opt.containerd_config + " and " + kDropinRel +
              " are back as they were; containerd was not restarted");
}

void restart_containerd(Run& run) {
  if (run.opt.restart_cmd.empty()) {
    run.log("containerd configuration changed: restart containerd on the node to apply it");
    return;
  }
  run.log("restarting containerd: " + run.opt.restart_cmd);
  auto r = run_quiet({"sh", "-c", run.opt.restart_cmd}, kRestartSeconds);
  std::fwrite(r.out.data(), 1, r.out.size(), stdout);
  std::fflush(stdout);
  if (r.exit_code != 127 || r.err.rfind("run ", 0) != 0) std::fwrite(r.err.data(), 1, r.err.size(), stderr);
  if (r.exit_code != 0)
    throw Error("restart command failed: " + run.opt.restart_cmd +
                (r.timed_out ? " (timed out after " + std::to_string(kRestartSeconds) + " s)" : ""));
}

}  // namespace specshim::shim::containerd
