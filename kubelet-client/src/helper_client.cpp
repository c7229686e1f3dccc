// SPDX-License-Identifier: Apache-2.0
// HelperClient: KubeletClient whose RPCs run in the specshim-kubelet helper,
// so the shim itself never loads gRPC or protobuf. The helper is spawned on
// the first RPC and serves every later one of this client over a socketpair;
// a call that overruns its deadline gets the helper killed, and the next
// call starts a new one. Checkpoint reading and plugin selection need no
// RPC of their own and run here (ClientBase).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "client_base.h"
#include "helper_protocol.h"
#include "specshim/kubelet/json.h"

extern char** environ;

namespace specshim::kubelet {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = Budget::Clock;

namespace {

// The helper's own gRPC deadline fires at the budget's end and it answers at
// once; this much more is allowed before it is presumed stuck and killed.
// Generous on purpose: on a loaded node the answer can be scheduled late, and
// killing the helper then throws away a good answer (discovery would lose a
// plugin that did reply).
constexpr std::chrono::milliseconds kGrace{200};

std::string errno_text(int err) {
  return std::strerror(err);
}

int ms_until(Clock::time_point t) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left + 1, INT_MAX));
}

class HelperClient final : public ClientBase {
 public:
  HelperClient(ClientOptions options, fs::path helper) : ClientBase(std::move(options)), helper_(std::move(helper)) {}
  ~HelperClient() override { stop(); }

  PodResources pod_resources(const std::string& ns, const std::string& name, const Budget& budget) override {
    return rpc("pod_resources", {{"namespace", ns}, {"name", name}}, budget, "Get", pr_socket()).get<PodResources>();
  }

  std::vector<PodResources> list_pods(const Budget& budget) override {
    return rpc("list_pods", json::object(), budget, "List", pr_socket()).get<std::vector<PodResources>>();
  }

  ResourceDevices allocatable(const Budget& budget) override {
    return rpc("allocatable", json::object(), budget, "GetAllocatableResources", pr_socket()).get<ResourceDevices>();
  }

  PluginOptions plugin_options(const fs::path& socket, const Budget& budget) override {
    return rpc("plugin_options", {{"socket", socket.string()}}, budget, "GetDevicePluginOptions", socket)
        .get<PluginOptions>();
  }

  AllocateResponse allocate(const fs::path& socket, const std::string& resource, const std::vector<std::string>& ids,
                            const Budget& budget) override {
    json args = {{"socket", socket.string()}, {"resource", resource}, {"device_ids", ids}};
    return rpc("allocate", std::move(args), budget, "Allocate", socket).get<AllocateResponse>();
  }

  std::vector<PluginInfo> list_plugins(const Budget& budget) override {
    fs::path dir = device_plugin_dir(options().kubelet_root);
    return rpc("list_plugins", json::object(), budget, "ListAndWatch", dir).get<std::vector<PluginInfo>>();
  }

 private:
  fs::path pr_socket() const { return pod_resources_socket(options().kubelet_root); }

  // rpc sends one request and waits for its answer until the budget's
  // deadline plus kGrace; call/target only name the RPC in messages.
  json rpc(const char* op, json args, const Budget& budget, const char* call, const fs::path& target) {
    std::string what = on_socket(call, target.string());
    if (budget.expired())
      throw DeadlineExceeded(what + ": budget of " + std::to_string(budget.total().count()) + " ms used up");
    if (pid_ < 0) start(what);
    args["op"] = op;
    args["total_ms"] = budget.total().count();
    args["deadline_ns"] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(budget.deadline().time_since_epoch()).count();
    Clock::time_point give_up = deadline::cap(budget.deadline() + kGrace);
    send_line(args.dump() + "\n", give_up, what, budget);
    json reply = parse_reply(read_line(give_up, what, budget), what);
    if (reply.value("ok", false)) return reply.contains("result") ? reply["result"] : json();
    throw_error(error_kind_from(reply.value("kind", "other")), reply.value("message", what + ": failed"));
  }

  void start(const std::string& what) {
    if (helper_.empty()) helper_ = find_helper();
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw Error(what + ": socketpair: " + errno_text(errno));
    // Keep both ends above 2 so the dup2s below cannot clobber one another
    // even when the shim runs with stdin/stdout closed.
    for (int& fd : sv) {
      int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
      ::close(fd);
      fd = high;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    std::string root = options().kubelet_root.string();
    const char* argv[] = {helper_.c_str(), "--kubelet-root", root.c_str(), nullptr};
    pid_t pid = -1;
    int err = ::posix_spawn(&pid, helper_.c_str(), &fa, nullptr, const_cast<char* const*>(argv), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(sv[1]);
    if (err != 0) {
      ::close(sv[0]);
      throw Error(what + ": start helper `" + helper_.string() + "`: " + errno_text(err));
    }
    pid_ = pid;
    fd_ = sv[0];
    buffer_.clear();
  }

  // stop kills the helper: it holds no state worth a graceful exit, and a
  // stuck one must not outlive the call.
  void stop() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    pid_ = -1;
  }

  // died reaps an exited helper and describes how it went.
  std::string died() {
    int status = 0;
    pid_t pid = pid_;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    pid_ = -1;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) return "helper exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "helper killed by signal " + std::to_string(WTERMSIG(status));
    return "helper ended";
  }

  [[noreturn]] void timed_out(const std::string& what, const Budget& budget) {
    stop();
    throw DeadlineExceeded(what + ": no answer within the budget of " + std::to_string(budget.total().count()) +
                           " ms (helper killed)");
  }

  bool wait(short events, Clock::time_point give_up) {
    for (;;) {
      pollfd p{fd_, events, 0};
      int n = ::poll(&p, 1, ms_until(give_up));
      if (n > 0) return true;
      if (n == 0) return false;
      if (errno != EINTR) return false;
    }
  }

  void send_line(const std::string& line, Clock::time_point give_up, const std::string& what, const Budget& budget) {
    std::size_t off = 0;
    while (off < line.size()) {
      if (!wait(POLLOUT, give_up)) timed_out(what, budget);
      ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n < 0) throw Protocol(what + ": " + died());
      off += static_cast<std::size_t>(n);
    }
  }

  std::string read_line(Clock::time_point give_up, const std::string& what, const Budget& budget) {
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (buffer_.size() > helper::kMaxLineBytes) {
        stop();
        throw Protocol(what + ": helper answer larger than 64 MiB");
      }
      if (!wait(POLLIN, give_up)) timed_out(what, budget);
      char buf[65536];
      ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) throw Protocol(what + ": " + died() + " before answering");
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }

  json parse_reply(const std::string& line, const std::string& what) {
    json reply = json::parse(line, nullptr, false);
    if (reply.is_discarded() || !reply.is_object()) {
      stop();
      throw Protocol(what + ": helper answered something that is not a JSON object");
    }
    return reply;
  }

  fs::path helper_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
};

bool executable(const fs::path& p) {
  return ::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p);
}

}  // namespace

fs::path find_helper() {
  if (const char* env = std::getenv("SPECSHIM_KUBELET_HELPER"); env && *env) return env;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && executable(self.parent_path() / helper::kHelperName)) return self.parent_path() / helper::kHelperName;
  fs::path installed = fs::path(SPECSHIM_LIBEXECDIR) / helper::kHelperName;
  if (executable(installed)) return installed;
  throw Error(std::string("find helper `") + helper::kHelperName + "`: not next to `" + self.string() + "` nor in `" +
              SPECSHIM_LIBEXECDIR + "`");
}

std::unique_ptr<KubeletClient> make_helper_client(const ClientOptions& options, fs::path helper) {
  return std::make_unique<HelperClient>(options, std::move(helper));
}

}  // namespace specshim::kubelet
