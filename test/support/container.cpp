// SPDX-License-Identifier: Apache-2.0
#include "container.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "tempdir.h"

extern char** environ;

namespace specshim::test {
namespace fs = std::filesystem;

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          int timeout_ms, const fs::path& cwd, bool capture) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!env.count(kv.substr(0, kv.find('=')))) envs.push_back(kv);
  }
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(capture ? out_pipe[1] : devnull, 1);
    ::dup2(capture ? err_pipe[1] : devnull, 2);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "exec %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  ProcessResult r;
  r.pid = pid;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  char buf[8192];
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(got));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.signaled = killed || WIFSIGNALED(status);
  if (r.signaled) r.exit_code = 128 + (killed ? SIGKILL : WTERMSIG(status));
  else r.exit_code = WEXITSTATUS(status);
  return r;
}

BusyboxBundle::BusyboxBundle(const fs::path& dir) : dir_(dir) {
  fs::create_directories(rootfs() / "bin");
  fs::create_directories(rootfs() / "etc");
  fs::create_directories(rootfs() / "tmp");
  fs::permissions(rootfs() / "tmp", fs::perms::all | fs::perms::sticky_bit);
  for (const char* d : {"proc", "dev", "sys"}) fs::create_directories(rootfs() / d);
  fs::copy_file(BUSYBOX_STATIC, rootfs() / "bin" / "busybox");
  ProcessResult list = run_process({BUSYBOX_STATIC, "--list"});
  std::size_t start = 0;
  while (start < list.out.size()) {
    auto end = list.out.find('\n', start);
    std::string applet = list.out.substr(start, end - start);
    if (!applet.empty() && applet != "busybox") fs::create_symlink("busybox", rootfs() / "bin" / applet);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  write_file(rootfs() / "etc" / "passwd", "root:x:0:0:root:/root:/bin/sh\n");
  write_file(rootfs() / "etc" / "group", "root:x:0:\n");

  ProcessResult spec = run_process({"/usr/sbin/runc", "spec", "--bundle", dir_.string()});
  if (spec.exit_code != 0) throw std::runtime_error("runc spec failed: " + spec.err);
  spec_ = Json::parse(read_file(dir_ / "config.json"));
  spec_["process"]["terminal"] = false;
  spec_["root"]["readonly"] = false;
  spec_["process"]["env"] = Json::array({"PATH=/bin", "HOME=/root"});
  save();
}

void BusyboxBundle::set_args(const std::vector<std::string>& args) { spec_["process"]["args"] = args; }

void BusyboxBundle::set_user(unsigned uid, unsigned gid) {
  spec_["process"]["user"] = Json{{"uid", uid}, {"gid", gid}};
}

void BusyboxBundle::save() const { write_file(dir_ / "config.json", spec_.dump(2) + "\n"); }

Shim::Shim(const fs::path& state_dir, const std::string& config_toml)
    : root_(state_dir / "runc-root"), config_(state_dir / "specshim.toml") {
  fs::create_directories(root_);
  write_file(config_, config_toml);
}

ProcessResult Shim::call(const BusyboxBundle& bundle, const std::vector<std::string>& verb_and_args,
                         bool capture) const {
  std::vector<std::string> argv = {SPECSHIM_BINARY, "--root", root_.string(), "--log",
                                   (bundle.dir() / "log.json").string(), "--log-format", "json"};
  argv.insert(argv.end(), verb_and_args.begin(), verb_and_args.end());
  return run_process(argv, env(), 30000, {}, capture);
}

ProcessResult Shim::run(const BusyboxBundle& bundle, const std::string& id) const {
  return call(bundle, {"run", "--bundle", bundle.dir().string(), id});
}

std::string Shim::log(const BusyboxBundle& bundle) {
  return fs::exists(bundle.dir() / "log.json") ? read_file(bundle.dir() / "log.json") : "";
}

std::string unique_id(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

}  // namespace specshim::test
