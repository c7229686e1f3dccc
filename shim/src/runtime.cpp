// SPDX-License-Identifier: Apache-2.0
#include "runtime.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "specshim/error.h"

extern char** environ;

namespace specshim::shim {
namespace {

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

bool is_executable_file(const std::string& path, struct stat& st) {
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string find_runtime(const std::optional<std::string>& configured) {
  struct stat self {};
  bool have_self = ::stat("/proc/self/exe", &self) == 0;
  struct stat st {};
  if (configured) {
    if (::stat(configured->c_str(), &st) != 0) throw_errno("find runtime: [runtime] path `" + *configured + "`");
    if (!is_executable_file(*configured, st))
      throw Error("find runtime: [runtime] path `" + *configured + "` is not an executable regular file");
    if (have_self && same_file(st, self))
      throw Error("find runtime: configured [runtime] path `" + *configured + "` is specshim itself");
    return *configured;
  }
  const char* env = std::getenv("PATH");
  std::string_view path = env && *env ? env : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  while (true) {
    auto colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/runc";
    if (is_executable_file(candidate, st) && !(have_self && same_file(st, self))) return candidate;
    if (colon == std::string_view::npos) break;
    path.remove_prefix(colon + 1);
  }
  throw Error("find runtime: no `runc` on PATH other than specshim itself (PATH=" +
              std::string(env ? env : "") + "); install runc or set [runtime] path in the specshim config");
}

void exec_runtime(const std::string& path, const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  args.push_back(const_cast<char*>(path.c_str()));
  for (std::size_t i = 1; i < argv.size(); ++i) args.push_back(const_cast<char*>(argv[i].c_str()));
  args.push_back(nullptr);
  ::execve(path.c_str(), args.data(), environ);
  throw_errno("exec runtime `" + path + "`");
}

}  // namespace specshim::shim
