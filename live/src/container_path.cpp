// SPDX-License-Identifier: Apache-2.0
// Container paths: checking one, and resolving its parent directory below the
// container's root (container_path.h).
#include "container_path.h"

#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "specshim/base/error.h"
#include "specshim/live/container.h"

namespace specshim::live {

int as_owner(int dirfd, const std::function<int()>& create) {
  int rc = create();
  if (rc == 0 || errno != EOVERFLOW) return rc;
  struct stat st {};
  if (::fstat(dirfd, &st) != 0) return -1;
  ::setfsgid(st.st_gid);
  ::setfsuid(st.st_uid);
  rc = create();
  int err = errno;
  ::setfsuid(0);
  ::setfsgid(0);
  errno = err;
  return rc;
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 1;
  while (i <= path.size()) {
    auto slash = path.find('/', i);
    if (slash == std::string::npos) slash = path.size();
    out.push_back(path.substr(i, slash - i));
    i = slash + 1;
  }
  return out;
}

void remove_dirs(const std::vector<std::string>& made) {
  for (auto it = made.rbegin(); it != made.rend(); ++it) {
    auto slash = it->rfind('/');
    std::string parent = slash == std::string::npos ? "." : it->substr(0, slash);
    std::string name = slash == std::string::npos ? *it : it->substr(slash + 1);
    try {
      fs::Fd p = fs::open_in_root("/", parent);
      ::unlinkat(p.get(), name.c_str(), AT_REMOVEDIR);  // only an empty one goes
    } catch (const std::exception&) {
    }
  }
}

Parent open_parent(const std::string& path, bool create) {
  auto comps = components(path);
  Parent out;
  out.name = comps.back();
  comps.pop_back();
  fs::Fd cur(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur) throw_errno("open the container's /");
  std::string prefix;
  for (const auto& c : comps) {
    std::string next = prefix.empty() ? c : prefix + "/" + c;
    fs::Fd fd;
    try {
      fd = fs::open_in_root("/", next);
    } catch (const fs::NotFound&) {
      if (!create) return Parent{};
      if (as_owner(cur.get(), [&] { return ::mkdirat(cur.get(), c.c_str(), 0755); }) != 0 && errno != EEXIST) {
        int err = errno;
        remove_dirs(out.made);
        throw_errno("make directory " + q("/" + next), err);
      }
      out.made.push_back(next);
      fd = fs::open_in_root("/", next);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + q("/" + next));
    if (!S_ISDIR(st.st_mode)) {
      remove_dirs(out.made);
      throw Error(q("/" + next) + " is not a directory");
    }
    cur = std::move(fd);
    prefix = next;
  }
  out.fd = std::move(cur);
  return out;
}

std::string check_container_path(const std::string& path) {
  if (path.empty() || path[0] != '/') return "must be an absolute path";
  if (path == "/") return "must name a file, not /";
  if (contains_control(path)) return "must not contain control characters";
  for (const auto& c : components(path)) {
    if (c.empty()) return "must not contain an empty component (//) or end in /";
    if (c == "." || c == "..") return "must not contain . or .. (it would leave the container's root)";
  }
  return "";
}

}  // namespace specshim::live
