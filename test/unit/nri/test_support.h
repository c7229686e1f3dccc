// SPDX-License-Identifier: Apache-2.0
// What the specshim-nri tests share (nri_frames_test.cpp, nri_session_test.cpp,
// nri_plugin_test.cpp): bytes laid out by hand the way containerd's Go side
// writes them (frames are built and taken apart here, not with frames.h's
// readers), the runtime's end of a socketpair with serve() running on the
// other, and a fake Service that records what it was asked.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/nri/session.h"
#include "ttrpc.pb.h"

namespace nri_test {

namespace api = ::nri::pkg::api::v1alpha1;
using specshim::nri::Registration;

inline constexpr const char* kPluginService = "nri.pkg.api.v1alpha1.Plugin";
inline constexpr const char* kRuntimeService = "nri.pkg.api.v1alpha1.Runtime";
inline constexpr std::uint8_t kRequest = 1, kResponse = 2;
// How long the runtime waits for the plugin's next bytes before the test
// fails (a bound on a broken test, not a synchronisation).
inline constexpr int kReadTimeoutMs = 10'000;

// be32 is v as four big-endian bytes, written out byte by byte.
inline std::string be32(std::uint32_t v) {
  std::string out(4, '\0');
  out[0] = static_cast<char>((v >> 24) & 0xff);
  out[1] = static_cast<char>((v >> 16) & 0xff);
  out[2] = static_cast<char>((v >> 8) & 0xff);
  out[3] = static_cast<char>(v & 0xff);
  return out;
}

inline std::uint32_t from_be32(std::string_view b) {
  auto at = [&](int i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(b[i])); };
  return at(0) << 24 | at(1) << 16 | at(2) << 8 | at(3);
}

// mux is one multiplexer frame: conn id | length | payload.
inline std::string mux(std::uint32_t conn, std::string_view payload) {
  return be32(conn) + be32(static_cast<std::uint32_t>(payload.size())) + std::string(payload);
}

// ttrpc_header is a ttRPC message's header alone, with any length.
inline std::string ttrpc_header(std::uint32_t length, std::uint32_t stream, std::uint8_t type, std::uint8_t flags = 0) {
  return be32(length) + be32(stream) + std::string(1, static_cast<char>(type)) +
         std::string(1, static_cast<char>(flags));
}

// ttrpc_message is one ttRPC message: length | stream | type | flags | data.
inline std::string ttrpc_message(std::uint32_t stream, std::uint8_t type, std::string_view data,
                                 std::uint8_t flags = 0) {
  return ttrpc_header(static_cast<std::uint32_t>(data.size()), stream, type, flags) + std::string(data);
}

// go_write is how containerd's Go side puts one ttRPC message on the socket:
// its first 4096 bytes in one frame, the rest (if any) in a second.
inline std::string go_write(std::uint32_t conn, std::string_view message) {
  if (message.size() <= 4096) return mux(conn, message);
  return mux(conn, message.substr(0, 4096)) + mux(conn, message.substr(4096));
}

inline std::string request(const std::string& method, const google::protobuf::MessageLite& payload,
                           const std::string& service = kPluginService) {
  ttrpc::Request req;
  req.set_service(service);
  req.set_method(method);
  req.set_payload(payload.SerializeAsString());
  req.set_timeout_nano(1'990'000'000);  // what containerd sends with its 2 s default
  return req.SerializeAsString();
}

inline std::string ok_response() {
  return ttrpc::Response().SerializeAsString();
}

inline api::Container container(const std::string& id) {
  api::Container c;
  c.set_id(id);
  c.set_pod_sandbox_id("pod-1");
  c.set_name(id + "-name");
  return c;
}

// FakeService answers with what the test set before serve started, and
// records what it was called with (serve calls it from its own thread).
class FakeService final : public specshim::nri::Service {
 public:
  std::int32_t events = specshim::nri::event_bit(api::CREATE_CONTAINER);
  api::CreateContainerResponse adjustment;
  std::optional<std::string> fail_create;                      // thrown as specshim::Error
  std::optional<specshim::nri::RpcStatus> fail_create_status;  // thrown as is
  bool fail_create_unknown = false;                            // throws what is no std::exception

  std::int32_t configure(const api::ConfigureRequest& req) override {
    std::lock_guard lock(mu_);
    configured_.push_back(req);
    return events;
  }
  void synchronized(const std::vector<std::string>& ids) override {
    std::lock_guard lock(mu_);
    synced_.push_back(ids);
  }
  api::CreateContainerResponse create_container(const api::CreateContainerRequest& req) override {
    {
      std::lock_guard lock(mu_);
      created_.push_back(req.container().id());
    }
    if (fail_create) throw specshim::Error(*fail_create);
    if (fail_create_status) throw *fail_create_status;
    if (fail_create_unknown) throw 42;
    return adjustment;
  }
  void removed(const api::Container& c) override {
    std::lock_guard lock(mu_);
    removed_.push_back(c.id());
  }

  std::vector<api::ConfigureRequest> configured() const {
    std::lock_guard lock(mu_);
    return configured_;
  }
  std::vector<std::vector<std::string>> synced() const {
    std::lock_guard lock(mu_);
    return synced_;
  }
  std::vector<std::string> created() const {
    std::lock_guard lock(mu_);
    return created_;
  }
  std::vector<std::string> removed() const {
    std::lock_guard lock(mu_);
    return removed_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<api::ConfigureRequest> configured_;
  std::vector<std::vector<std::string>> synced_;
  std::vector<std::string> created_;
  std::vector<std::string> removed_;
};

struct Frame {
  std::uint32_t conn = 0;
  std::string payload;
};

struct Message {
  std::uint32_t conn = 0;
  std::uint32_t stream = 0;
  std::uint8_t type = 0;
  std::uint8_t flags = 0;
  std::string data;
};

// Runtime is containerd's end of the socket, with serve() running on the
// other end in a thread, answering with service (a FakeService, or the real
// Plugin). Its destructor hangs up, which makes serve return, so a failed
// REQUIRE never leaves the thread behind.
class Runtime {
 public:
  Runtime(specshim::nri::Service& service, Registration reg = {}) : reg_(std::move(reg)) {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    fd_ = fds[0];
    plugin_fd_ = fds[1];
    serving_ =
        std::async(std::launch::async, [this, &service] { return specshim::nri::serve(plugin_fd_, reg_, service); });
  }
  ~Runtime() {
    hang_up();
    if (serving_.valid()) {
      try {
        serving_.get();
      } catch (...) {
      }
    }
    ::close(plugin_fd_);
  }
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Registration& registration() const { return reg_; }

  void write(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      REQUIRE(n > 0);
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  // read_exact reads n bytes the plugin wrote, failing the test at EOF or
  // after kReadTimeoutMs without a byte.
  std::string read_exact(std::size_t n) {
    std::string out;
    while (out.size() < n) {
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, kReadTimeoutMs);
      if (r < 0 && errno == EINTR) continue;
      REQUIRE(r == 1);
      char buf[64 * 1024];
      ssize_t got = ::read(fd_, buf, std::min(sizeof buf, n - out.size()));
      if (got < 0 && errno == EINTR) continue;
      REQUIRE(got > 0);
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }

  Frame read_frame() {
    std::string header = read_exact(8);
    Frame f;
    f.conn = from_be32(header);
    f.payload = read_exact(from_be32(std::string_view(header).substr(4)));
    return f;
  }

  // read_message reads frames until one connection holds a whole ttRPC
  // message, and returns it.
  Message read_message() {
    for (;;) {
      for (auto& [conn, buf] : pending_) {
        if (buf.size() < 10 || buf.size() < 10 + from_be32(buf)) continue;
        std::uint32_t size = from_be32(buf);
        Message m{conn, from_be32(std::string_view(buf).substr(4)), static_cast<std::uint8_t>(buf[8]),
                  static_cast<std::uint8_t>(buf[9]), buf.substr(10, size)};
        buf.erase(0, 10 + size);
        return m;
      }
      Frame f = read_frame();
      pending_[f.conn] += f.payload;
    }
  }

  // read_register_request reads RegisterPlugin's request, checks its
  // envelope and returns it.
  ttrpc::Request read_register_request() {
    Message m = read_message();
    CHECK(m.conn == 2);
    CHECK(m.stream == 1);
    CHECK(m.type == kRequest);
    CHECK(m.flags == 0);
    ttrpc::Request req;
    REQUIRE(req.ParseFromString(m.data));
    CHECK(req.service() == kRuntimeService);
    CHECK(req.method() == "RegisterPlugin");
    return req;
  }

  // register_plugin takes the registration and answers it: OK.
  void register_plugin() {
    read_register_request();
    write(go_write(2, ttrpc_message(1, kResponse, ok_response())));
  }

  // call makes one call to the plugin on connection 1 and returns its
  // answer, whose envelope it checks.
  ttrpc::Response call(std::uint32_t stream, const std::string& method, const google::protobuf::MessageLite& payload,
                       const std::string& service = kPluginService) {
    write(go_write(1, ttrpc_message(stream, kRequest, request(method, payload, service))));
    return read_response(stream);
  }

  ttrpc::Response read_response(std::uint32_t stream) {
    Message m = read_message();
    REQUIRE(m.conn == 1);
    CHECK(m.stream == stream);
    CHECK(m.type == kResponse);
    CHECK(m.flags == 0);
    ttrpc::Response resp;
    REQUIRE(resp.ParseFromString(m.data));
    return resp;
  }

  void hang_up() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // ended hangs up and returns what serve returned (or rethrows what it threw).
  std::string ended() {
    hang_up();
    return serving_.get();
  }
  // outcome is what serve returned or threw, without hanging up.
  std::string outcome() { return serving_.get(); }
  // still_serving_after: serve neither returned nor threw within d (a bound
  // on a deadline that must not fire, not a synchronisation).
  bool still_serving_after(std::chrono::milliseconds d) { return serving_.wait_for(d) == std::future_status::timeout; }

 private:
  Registration reg_;
  int fd_ = -1, plugin_fd_ = -1;
  std::future<std::string> serving_;
  std::map<std::uint32_t, std::string> pending_;
};

template <typename M>
M payload_of(const ttrpc::Response& resp) {
  CHECK(resp.status().code() == 0);
  M m;
  REQUIRE(m.ParseFromString(resp.payload()));
  return m;
}

inline api::ConfigureRequest configure_request() {
  api::ConfigureRequest req;
  req.set_runtime_name("containerd");
  req.set_runtime_version("2.1.4");
  req.set_registration_timeout(5000);
  req.set_request_timeout(2000);
  return req;
}

inline api::CreateContainerRequest create_request(const std::string& id) {
  api::CreateContainerRequest req;
  req.mutable_pod()->set_id("pod-1");
  *req.mutable_container() = container(id);
  return req;
}

}  // namespace nri_test
