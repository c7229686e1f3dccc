// SPDX-License-Identifier: Apache-2.0
#include "runtimes.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace specshim::test {
namespace fs = std::filesystem;

namespace {

std::string read_or_empty(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string cache_dir() {
  const char* cache = std::getenv("SPECSHIM_CONTAINERD_CACHE");
  return cache && *cache ? cache : "/var/cache/specshim-test";
}

fs::path runtime_binary(const std::string& name, const std::string& who) {
  if (name == "runc-1.1") {
    const fs::path runc = "/usr/sbin/runc";
    if (::access(runc.c_str(), X_OK) != 0)
      throw std::runtime_error(who + ": no executable " + runc.string() +
                               ". Install Debian 12's runc package (scripts/install-deps.sh does)");
    return runc;
  }
  if (name != "runc-1.3" && name != "crun")
    throw std::invalid_argument("runtime_binary: unknown runtime `" + name + "` (runc-1.1, runc-1.3 or crun)");
  const bool crun = name == "crun";
  const std::string var = crun ? "SPECSHIM_CRUN" : "SPECSHIM_RUNC_1_3";
  const char* given = std::getenv(var.c_str());
  const fs::path binary = given && *given
                              ? fs::path(given)
                              : fs::path(cache_dir()) / ("runtime-" + name) / (crun ? "usr/bin/crun" : "usr/sbin/runc");
  if (::access(binary.c_str(), X_OK) != 0)
    throw std::runtime_error(who + ": no executable " + binary.string() +
                             ". Run scripts/install-deps.sh (scripts/fetch-runtimes.sh downloads " + name +
                             " from Debian sid), or set " + var + " to a " + name + " binary");
  return binary;
}

void free_cgroup2_controllers(const std::string& error_prefix, const std::string& log_prefix) {
  static const bool done = [&] {
    const fs::path unified = "/sys/fs/cgroup/unified";
    std::istringstream words(read_or_empty(unified / "cgroup.controllers"));
    for (std::string name; words >> name;) {
      const fs::path at = fs::path("/sys/fs/cgroup") / name;
      fs::create_directories(at);
      if (::mount("cgroup", at.c_str(), "cgroup", 0, name.c_str()) != 0 && errno != EBUSY)
        throw std::runtime_error(error_prefix + ": moving the " + name +
                                 " controller off cgroup2 (mount -t cgroup -o " + name + " cgroup " + at.string() +
                                 "): " + std::strerror(errno));
      std::fprintf(stderr,
                   "%s: crun refuses a hybrid cgroup host whose cgroup2 holds a controller: moved %s off %s to a "
                   "cgroup v1 hierarchy at %s\n",
                   log_prefix.c_str(), name.c_str(), unified.c_str(), at.c_str());
    }
    const std::string left = read_or_empty(unified / "cgroup.controllers");
    if (left.find_first_not_of(" \n") != std::string::npos)
      throw std::runtime_error(error_prefix + ": cgroup2 at " + unified.string() + " still holds controllers: " + left);
    return true;
  }();
  (void)done;
}

std::string nvidia_stand_in(const std::filesystem::path& record, const std::filesystem::path& runtime) {
  return "#!/bin/sh\n"
         "bundle=.; prev=\n"
         "for a in \"$@\"; do case \"$prev\" in --bundle|-b) bundle=$a ;; esac; prev=$a; done\n"
         "case \" $* \" in *\" create \"*|*\" run \"*)\n"
         "  python3 -c 'import json,sys\n"
         "env = json.load(open(sys.argv[1])).get(\"process\", {}).get(\"env\", [])\n"
         "vals = [e.split(\"=\", 1)[1] for e in env if e.startswith(\"NVIDIA_VISIBLE_DEVICES=\")]\n"
         "print(vals[-1] if vals else \"unset\")' \"$bundle/config.json\" >>'" +
         record.string() +
         "' ;;\n"
         "esac\n"
         "exec '" +
         runtime.string() + "' \"$@\"\n";
}

}  // namespace specshim::test
