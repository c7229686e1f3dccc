// SPDX-License-Identifier: Apache-2.0
#include "runtime.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include "specshim/base/error.h"
#include "specshim/base/runtime_kind.h"

extern char** environ;

namespace specshim::shim {
namespace {

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool is_executable_file(const std::string& path, struct stat& st) {
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// on_path returns the first executable dir/name over the dirs of path that
// is not self (specshim installed under the runtime's name).
std::optional<std::string> on_path(std::string_view path, std::string_view name, const struct stat* self) {
  struct stat st {};
  while (true) {
    auto colon = path.find(':');
    std::string dir(path.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + std::string(name);
    if (is_executable_file(candidate, st) && !(self && same_file(st, *self))) return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    path.remove_prefix(colon + 1);
  }
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
  for (const auto& kind : runtime::kinds())
    if (auto found = on_path(path, kind.binary, have_self ? &self : nullptr)) return *found;
  throw Error("find runtime: no `runc` on PATH other than specshim itself, nor `crun` (PATH=" +
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
