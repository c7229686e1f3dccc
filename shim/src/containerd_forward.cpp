// SPDX-License-Identifier: Apache-2.0
// specshim containerd ...: execs the installer binary, specshim-containerd.
// The installer is a program of its own so that its code (a third of a
// megabyte) is not in the binary containerd execs for every container: the
// passthrough's page faults stay where they were (docs/BENCHMARKS.md).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "verbs.h"

namespace specshim::shim {
namespace {

constexpr const char* kInstaller = "specshim-containerd";

bool runnable(const std::string& p) {
  return ::access(p.c_str(), X_OK) == 0;
}

// installer is where specshim-containerd is: SPECSHIM_CONTAINERD_INSTALLER,
// beside this binary (a build tree), in ../libexec/specshim/ from it (an
// installed or staged package: usr/bin -> usr/libexec/specshim), or in the
// libexec dir compiled in.
std::string installer(std::vector<std::string>& tried) {
  if (const char* env = std::getenv("SPECSHIM_CONTAINERD_INSTALLER"); env && *env) return env;
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<std::size_t>(n));
    dir.erase(dir.rfind('/') + 1);
    tried = {dir + kInstaller, dir + "../libexec/specshim/" + kInstaller};
  }
  tried.push_back(std::string(SPECSHIM_LIBEXECDIR) + "/" + kInstaller);
  for (const auto& p : tried)
    if (runnable(p)) return p;
  return "";
}

}  // namespace

int containerd_forward_main(const std::vector<std::string>& argv) {
  std::vector<std::string> tried;
  std::string bin = installer(tried);
  if (bin.empty()) {
    std::string where;
    for (const auto& p : tried) where += (where.empty() ? "" : ", ") + p;
    std::fprintf(stderr, "specshim-install: error: cannot find %s (looked at %s)\n", kInstaller, where.c_str());
    return 1;
  }
  std::vector<char*> args;
  args.push_back(bin.data());
  for (std::size_t i = 2; i < argv.size(); ++i) args.push_back(const_cast<char*>(argv[i].c_str()));
  args.push_back(nullptr);
  ::execv(bin.c_str(), args.data());
  std::perror(("specshim-install: error: exec " + bin).c_str());
  return 1;
}

}  // namespace specshim::shim
