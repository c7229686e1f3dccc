// SPDX-License-Identifier: Apache-2.0
#include "specshim/nri/session.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>

#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/nri/frames.h"
#include "ttrpc.pb.h"

namespace specshim::nri {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kPluginService = "nri.pkg.api.v1alpha1.Plugin";
constexpr const char* kRuntimeService = "nri.pkg.api.v1alpha1.Runtime";
constexpr std::uint32_t kRegisterStream = 1;  // the plugin's first call on connection 2

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

template <typename M>
M parse(const std::string& payload, const std::string& method) {
  M m;
  if (!m.ParseFromString(payload)) throw RpcStatus{3, "cannot decode the " + method + " request"};  // InvalidArgument
  return m;
}

class Connection {
 public:
  Connection(int fd, const Registration& reg, Service& service) : fd_(fd), reg_(reg), service_(service) {}

  std::string run() {
    register_plugin();
    auto deadline = Clock::now() + reg_.timeout;
    char buf[64 * 1024];
    for (;;) {
      int wait = registered_ ? -1 : ms_left(deadline);
      if (!registered_ && wait == 0)
        throw Error("RegisterPlugin: no answer within " + std::to_string(reg_.timeout.count()) + " ms");
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, wait);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw_errno("poll the NRI socket");
      if (r == 0) continue;
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::string("read: ") + std::strerror(errno);
      if (n == 0) {
        if (mux_.pending() || plugin_in_.pending() || runtime_in_.pending())
          return "the runtime closed the connection in the middle of a message";
        return "the runtime closed the connection";
      }
      mux_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      try {
        while (auto frame = mux_.next()) take(*frame);
      } catch (const FrameError& e) {
        throw Error("NRI framing: " + e.what);
      }
    }
  }

 private:
  void take(const MuxFrame& frame) {
    if (frame.conn == kPluginConn) {
      plugin_in_.feed(frame.payload);
      while (auto m = plugin_in_.next()) answer(*m);
    } else if (frame.conn == kRuntimeConn) {
      runtime_in_.feed(frame.payload);
      while (auto m = runtime_in_.next()) registered(*m);
    } else {
      log::debug("nri: dropped a frame for connection {} ({} bytes)", frame.conn, frame.payload.size());  // as Go does
    }
  }

  void send(std::uint32_t conn, std::uint32_t stream, MessageType type, const std::string& data) {
    auto deadline = Clock::now() + reg_.timeout;
    for (const auto& frame : mux_frames(conn, message_bytes(stream, type, data))) {
      std::size_t done = 0;
      while (done < frame.size()) {
        ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) {
          done += static_cast<std::size_t>(n);
          continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) throw_errno("write to the NRI socket");
        pollfd p{fd_, POLLOUT, 0};
        int left = ms_left(deadline);
        if (left == 0 || ::poll(&p, 1, left) == 0)
          throw Error("write to the NRI socket: the runtime read nothing for " + std::to_string(reg_.timeout.count()) +
                      " ms");
      }
    }
  }

  void register_plugin() {
    api::RegisterPluginRequest r;
    r.set_plugin_name(reg_.name);
    r.set_plugin_idx(reg_.index);
    ttrpc::Request req;
    req.set_service(kRuntimeService);
    req.set_method("RegisterPlugin");
    req.set_payload(r.SerializeAsString());
    req.set_timeout_nano(std::chrono::nanoseconds(reg_.timeout).count());
    send(kRuntimeConn, kRegisterStream, MessageType::request, req.SerializeAsString());
  }

  // registered takes the runtime's answer to RegisterPlugin (which may come
  // after its first calls on connection 1: it calls Configure at once).
  void registered(const Message& m) {
    if (m.type != MessageType::response || m.stream != kRegisterStream) {
      log::debug("nri: unexpected message type {} on stream {} of connection 2", static_cast<int>(m.type), m.stream);
      return;
    }
    ttrpc::Response resp;
    if (m.oversized || !resp.ParseFromString(m.data)) throw Error("RegisterPlugin: cannot decode the answer");
    if (resp.status().code() != 0)
      throw Error("RegisterPlugin " + reg_.index + "-" + reg_.name + ": refused: " + resp.status().message() +
                  " (code " + std::to_string(resp.status().code()) + ")");
    registered_ = true;
  }

  void answer(const Message& m) {
    if (m.type != MessageType::request) return;  // NRI is unary: nothing else comes to a server
    ttrpc::Response resp;
    ttrpc::Request req;
    try {
      if (m.oversized) throw RpcStatus{kResourceExhausted, "a request over 4 MiB"};
      if (!req.ParseFromString(m.data)) throw RpcStatus{3, "cannot decode the ttRPC request"};
      if (req.service() != kPluginService) throw RpcStatus{kUnimplemented, "service " + req.service()};
      std::string payload = call(req.method(), req.payload());
      // Room for the envelope: a reply ttRPC cannot carry fails this call only.
      if (payload.size() > kMaxMessageBytes - 64)
        throw RpcStatus{kResourceExhausted, "the " + req.method() + " reply is " + std::to_string(payload.size()) +
                                                " bytes, over ttRPC's 4 MiB"};
      resp.set_payload(std::move(payload));
    } catch (const RpcStatus& s) {
      resp.mutable_status()->set_code(s.code);
      resp.mutable_status()->set_message(s.message);
    } catch (const std::exception& e) {
      resp.mutable_status()->set_code(kFailedPrecondition);
      resp.mutable_status()->set_message(cap_message(describe(e)));
    } catch (...) {
      // Whatever a call throws fails that call alone: the connection, and
      // with it the registration, stays.
      resp.mutable_status()->set_code(kUnknown);
      resp.mutable_status()->set_message(req.method() + ": unknown error");
    }
    send(kPluginConn, m.stream, MessageType::response, resp.SerializeAsString());
  }

  std::string call(const std::string& method, const std::string& payload) {
    if (method == "Configure") {
      auto req = parse<api::ConfigureRequest>(payload, method);
      api::ConfigureResponse resp;
      resp.set_events(service_.configure(req));
      return resp.SerializeAsString();
    }
    if (method == "Synchronize") {
      auto req = parse<api::SynchronizeRequest>(payload, method);
      for (const auto& c : req.containers()) synced_.push_back(c.id());
      if (!req.more()) service_.synchronized(std::exchange(synced_, {}));
      api::SynchronizeResponse resp;
      resp.set_more(req.more());  // a paged sync is answered page by page, updates only in the last
      return resp.SerializeAsString();
    }
    if (method == "CreateContainer")
      return service_.create_container(parse<api::CreateContainerRequest>(payload, method)).SerializeAsString();
    if (method == "RemoveContainer") {
      service_.removed(parse<api::RemoveContainerRequest>(payload, method).container());
      return api::RemoveContainerResponse().SerializeAsString();
    }
    if (method == "StateChange") {
      auto ev = parse<api::StateChangeEvent>(payload, method);
      if (ev.event() == api::REMOVE_CONTAINER) service_.removed(ev.container());
      return api::Empty().SerializeAsString();
    }
    if (method == "StopContainer") return api::StopContainerResponse().SerializeAsString();
    if (method == "UpdateContainer") return api::UpdateContainerResponse().SerializeAsString();
    if (method == "Shutdown") return api::Empty().SerializeAsString();
    // Newer runtimes fall back to StateChange for an event on Unimplemented.
    throw RpcStatus{kUnimplemented, "method " + method};
  }

  int fd_;
  const Registration& reg_;
  Service& service_;
  MuxReader mux_;
  MessageReader plugin_in_, runtime_in_;
  bool registered_ = false;
  std::vector<std::string> synced_;
};

}  // namespace

std::string serve(int fd, const Registration& reg, Service& service) {
  return Connection(fd, reg, service).run();
}

int connect_unix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) < 0) {
    int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

}  // namespace specshim::nri
