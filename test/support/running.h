// SPDX-License-Identifier: Apache-2.0
// A running runc container (busybox `sleep`, its own runc --root) and the
// real specshim binary's own verbs against it: for the integration tests of
// verbs that act on running containers (attach, diagnose).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "container.h"

namespace specshim::test {

inline constexpr const char* kRunc = "/usr/sbin/runc";

// opens is a container command: whether path is a character device that
// opens for writing (the cgroup decides; a missing path fails, and is not
// created). It prints open-ok or open-failed.
std::vector<std::string> opens(const std::string& path);

// Running is a runc container (create + start, straight through kRunc, not
// through specshim) running `sleep`, killed and deleted at the end. Its
// bundle is dir/bundle with CAP_MKNOD added (the probes make their own
// nodes), then edit applied; runc's --root is root, dir/runc-root when empty.
// The id is unique_id(id_prefix).
class Running {
 public:
  explicit Running(const std::filesystem::path& dir, const std::function<void(BusyboxBundle&)>& edit = {},
                   const std::string& id_prefix = "it-attach", const std::filesystem::path& root = {});
  ~Running();
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

  const std::string& id() const { return id_; }
  const std::filesystem::path& root() const { return root_; }
  const BusyboxBundle& bundle() const { return bundle_; }
  // record is the bundle's `specshim attach` record.
  std::filesystem::path record() const { return bundle_.dir() / "specshim-attached.json"; }

  // exec runs cmd in the container (`runc exec`).
  ProcessResult exec(const std::vector<std::string>& cmd) const;
  // sh runs script with /bin/sh -c in the container and returns its stdout.
  std::string sh(const std::string& script) const;
  // pid is the container's init pid (`runc state`).
  pid_t pid() const;
  // rule_allows is whether a node 1:11 the container makes itself opens: the cgroup alone decides.
  bool rule_allows() const;

 private:
  std::filesystem::path root_;
  BusyboxBundle bundle_;
  std::string id_;
};

// Specshim runs the real binary's own verbs against one container:
// `specshim VERB --root ROOT --config CONFIG ARGS...`.
struct Specshim {
  const Running& c;
  std::filesystem::path config;

  ProcessResult operator()(const std::string& verb, const std::vector<std::string>& args) const;
  ProcessResult attach(const std::vector<std::string>& args) const { return with_id("attach", args); }
  ProcessResult detach(const std::vector<std::string>& args) const { return with_id("detach", args); }
  // attached is `attached --format json ID`, which must succeed.
  Json attached() const;
  // with_id runs verb with the container's id before args.
  ProcessResult with_id(const std::string& verb, std::vector<std::string> args) const;
};

}  // namespace specshim::test
