// SPDX-License-Identifier: Apache-2.0
#include "harness_cleanup.h"

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "container.h"
#include "containerd_harness.h"

namespace specshim::e2e {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Undo the octal escapes (\040 for a space ...) of /proc/self/mountinfo.
std::string unescape_mountinfo(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// kill_leftovers ends shims started for this containerd and processes whose
// root is one of its container rootfs, then clears what they left: runc
// state and shim sockets (which live under /run/containerd, outside dir).
void kill_leftovers(const fs::path& dir) noexcept {
  const std::string prefix = dir.string() + "/";
  const std::string socket = (dir / "containerd.sock").string();
  std::vector<pid_t> killed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    pid_t pid = std::stoi(name);
    bool our_shim = is_shim_of(cmdline(entry.path()), socket);
    std::error_code rec;
    auto root = fs::read_symlink(entry.path() / "root", rec).string();
    bool in_our_rootfs = !rec && root.starts_with(prefix);
    if (our_shim || in_our_rootfs) {
      ::kill(pid, SIGKILL);
      killed.push_back(pid);
    }
  }
  poll_until([&] { return std::none_of(killed.begin(), killed.end(), [](pid_t p) { return ::kill(p, 0) == 0; }); }, 5s);

  for (const auto& ns : fs::directory_iterator(dir / "state" / "io.containerd.runtime.v2.task", ec)) {
    std::error_code iec;
    for (const auto& bundle : fs::directory_iterator(ns.path(), iec)) {
      const std::string runc_root = "/run/containerd/runc/" + ns.path().filename().string();
      test::run_process(
          {tier().runtime.string(), "--root", runc_root, "delete", "--force", bundle.path().filename().string()}, {},
          10000);
      std::string address = read_or_empty(bundle.path() / "address");
      if (address.starts_with("unix://")) ::unlink(address.substr(7).c_str());
    }
  }
}

void unmount_under(const fs::path& dir) noexcept {
  const std::string prefix = dir.string() + "/";
  std::vector<std::string> points;
  std::istringstream in(read_or_empty("/proc/self/mountinfo"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    fields >> id >> parent >> devno >> root >> point;
    point = unescape_mountinfo(point);
    if (point.starts_with(prefix)) points.push_back(point);
  }
  std::sort(points.begin(), points.end(), [](auto& a, auto& b) { return a.size() > b.size(); });
  for (const auto& p : points) ::umount2(p.c_str(), MNT_DETACH);
}

void remove_cgroups(const std::string& cgroup_root) noexcept {
  std::error_code ec;
  for (const auto& controller : fs::directory_iterator("/sys/fs/cgroup", ec)) {
    fs::path top = controller.path() / cgroup_root;
    std::error_code iec;
    if (!fs::is_directory(top, iec)) continue;
    // cgroup directories can only be rmdir'ed, deepest first.
    std::vector<fs::path> dirs;
    for (auto it = fs::recursive_directory_iterator(top, iec); !iec && it != fs::recursive_directory_iterator();
         it.increment(iec))
      if (it->is_directory(iec)) dirs.push_back(it->path());
    std::sort(dirs.begin(), dirs.end(), [](auto& a, auto& b) { return a.string().size() > b.string().size(); });
    for (const auto& d : dirs) ::rmdir(d.c_str());
    ::rmdir(top.c_str());
    // ctr's tasks default to /<namespace>/<id>; the parent goes once empty.
    ::rmdir((controller.path() / kCtrNamespace).c_str());
  }
  // runc roots that containerd made for our namespaces, once empty.
  for (const char* ns : {kCtrNamespace, "k8s.io"}) ::rmdir((fs::path("/run/containerd/runc") / ns).c_str());
}

bool process_alive(pid_t pid) {
  return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

}  // namespace

std::string read_or_empty(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// cmdline of a process as its argv.
std::vector<std::string> cmdline(const fs::path& proc) {
  std::string raw = read_or_empty(proc / "cmdline");
  std::vector<std::string> argv;
  std::size_t start = 0;
  for (std::size_t i = 0; i < raw.size(); ++i)
    if (raw[i] == '\0') argv.push_back(raw.substr(start, i - start)), start = i + 1;
  return argv;
}

bool is_shim_of(const std::vector<std::string>& argv, const std::string& socket) {
  return !argv.empty() && argv[0].ends_with("containerd-shim-runc-v2") &&
         std::find(argv.begin(), argv.end(), socket) != argv.end();
}

std::string cgroup_root_of(const fs::path& dir) {
  return "specshim-e2e-" + dir.filename().string();
}

// clean_up_after leaves nothing behind of a harness dir's containerd once
// that containerd is gone.
void clean_up_after(const fs::path& dir) noexcept {
  kill_leftovers(dir);
  unmount_under(dir);
  remove_cgroups(cgroup_root_of(dir));
}

// sweep_stale cleans up and removes harness dirs whose test process is gone
// without its teardown (killed by a ctest timeout or a signal), so that one
// killed run does not leave containerds, shims and mounts behind for good.
void sweep_stale(const fs::path& base, const fs::path& self) noexcept {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(base, ec)) {
    const fs::path dir = entry.path();
    if (dir == self || !dir.filename().string().starts_with("specshim-test-")) continue;
    std::string owner = read_or_empty(dir / "e2e-owner");
    if (owner.empty() || process_alive(std::atoi(owner.c_str()))) continue;
    pid_t containerd = std::atoi(read_or_empty(dir / "containerd.pid").c_str());
    auto argv = containerd > 0 ? cmdline(fs::path("/proc") / std::to_string(containerd)) : std::vector<std::string>{};
    bool ours = std::any_of(argv.begin(), argv.end(), [&](const std::string& a) {
      return a == (dir / "config.toml").string() || a == (dir / "node/etc/containerd/config.toml").string();
    });
    if (ours) {
      ::kill(containerd, SIGKILL);
      poll_until([&] { return !process_alive(containerd); }, 5s);
    }
    clean_up_after(dir);
    std::error_code rec;
    fs::remove_all(dir, rec);
  }
}

}  // namespace specshim::e2e
