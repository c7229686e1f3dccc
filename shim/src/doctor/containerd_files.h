// SPDX-License-Identifier: Apache-2.0
// containerd's config files as containerd reads them, for doctor's
// containerd check: the root file and, breadth first, what it imports (and
// the conf.d drop-ins containerd does not load), each file's runtimes and
// CRI keys, and how a key's value merges over the loaded files per
// containerd line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "doctor/doctor.h"
#include "specshim/base/config.h"
#include "specshim/node/containerd_config.h"

namespace specshim::shim::doctor::containerd_files {

namespace fs = std::filesystem;

using node::containerd_config::Line;
using node::containerd_config::Setting;

// Runtime is one plugins.<cri>.containerd.runtimes.<name> table.
struct Runtime {
  std::string name;
  std::string type;
  std::string binary;
  Setting<bool> systemd_cgroup = {};  // options.SystemdCgroup, where set
};

// File is one containerd config file as containerd reads it.
struct File {
  fs::path path;
  bool loaded = false;  // containerd loads it (the root file and its imports)
  std::int64_t version = 1;
  bool has_cri = false;  // it has the CRI table that holds enable_cdi
  Setting<bool> enable_cdi;
  Setting<std::vector<std::string>> cdi_dirs;
  Setting<std::string> default_runtime;  // containerd.default_runtime_name of the CRI table
};

// Scan is what doctor read of containerd's config files; reading one adds
// its problems to check (a missing import, a file that does not parse).
struct Scan {
  const Host& host;
  const fs::path& self;
  Check& check;
  int registered = 0;
  std::vector<File> files;
  // Found is a runtime as one file defines it, judged once every file is read.
  struct Found {
    fs::path file;
    bool loaded;
    Runtime runtime;
  };
  std::vector<Found> found;

  // runtime judges one runtime that is specshim's by name or BinaryName.
  void runtime(const fs::path& file, const Runtime& r);
  // this_binary: r's BinaryName is this binary (the same file on the host).
  bool this_binary(const Runtime& r) const;
  // cri_cdi reads enable_cdi and cdi_spec_dirs of one file.
  static void cri_cdi(config::Section& root, File& f);
  // file scans one config and returns the imports it names, as host paths.
  std::vector<fs::path> file(const fs::path& path, bool loaded);
  // judge_runtimes checks every runtime found. containerd 2.x merges the
  // loaded files key by key, so a drop-in that sets only a handler's
  // BinaryName (install-on-host.sh --handler) has the runtime_type of the
  // root's table; runc without one anywhere is containerd's built-in
  // handler, of type io.containerd.runc.v2.
  void judge_runtimes();
  // walk reads start and, breadth first as containerd does, the files it imports.
  void walk(std::vector<fs::path> queue, bool loaded);
  // handler_cgroups is how each handler whose BinaryName is this binary
  // makes container cgroups: its SystemdCgroup merged over the loaded files
  // as line merges them (cgroup_driver.cpp).
  HandlerCgroups handler_cgroups(Line line) const;
};

using node::containerd_config::clean_dir;
using node::containerd_config::expand;
using node::containerd_config::same_file;

// judge_cgroup_driver compares the kubelet's cgroupDriver (its config file
// under kubelet_root, a host path) with each handler's SystemdCgroup: a
// mismatch is a fail naming both files and values, no readable kubelet
// config a note (cgroup_driver.cpp).
void judge_cgroup_driver(const Host& host, const fs::path& kubelet_root, const HandlerCgroups& handlers, Check& c);

// merged is the value a key of the CRI table has once containerd has read
// every file the scan loaded (containerd_config::merged).
template <typename T>
Setting<T> merged(const Scan& scan, Line line, Setting<T> File::*key) {
  return node::containerd_config::merged(scan.files, line, key);
}

}  // namespace specshim::shim::doctor::containerd_files
