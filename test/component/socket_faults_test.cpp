// SPDX-License-Identifier: Apache-2.0
// kubelet-client against sockets that misbehave below gRPC (RawSocketServer):
// a peer that never answers, answers garbage, hangs up at once or mid-stream,
// or never accepts. Through both implementations, every call must end within
// its budget plus a margin, with the error type the failure deserves and a
// message that names the socket; discovery must still find a good plugin
// next to a bad one.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>

#include "fake_kubelet.h"
#include "raw_socket_server.h"
#include "specshim/kubelet/client.h"
#include "tempdir.h"

using namespace specshim;
using namespace std::chrono_literals;
using Catch::Contains;
using kubelet::Budget;
using kubelet::ErrorKind;
using test::RawMode;
using test::RawSocketServer;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kBudget = 300ms;
// Upper bound over a budget: helper start-up, gRPC's timers and a loaded
// 2-core machine. Only upper bounds are asserted.
constexpr milliseconds kSlack = 1500ms;

// Fault is a misbehaviour and the error type a call meeting it must throw:
// a peer that stays quiet costs the deadline; one that breaks the
// connection is Unavailable at once.
struct Fault {
  RawMode mode;
  ErrorKind kind;
};

Fault fault() {
  return GENERATE(values<Fault>({{RawMode::silent, ErrorKind::deadline},
                                 {RawMode::garbage, ErrorKind::unavailable},
                                 {RawMode::close_at_once, ErrorKind::unavailable},
                                 {RawMode::close_mid_stream, ErrorKind::unavailable},
                                 {RawMode::backlog_only, ErrorKind::deadline},
                                 {RawMode::backlog_full, ErrorKind::unavailable}}));
}

std::string implementation() {
  return GENERATE(as<std::string>{}, "grpc", "helper");
}

std::unique_ptr<kubelet::KubeletClient> make_client(const std::string& kind, const fs::path& root) {
  kubelet::ClientOptions options{root};
  if (kind == "grpc") return kubelet::make_grpc_client(options);
  return kubelet::make_helper_client(options, SPECSHIM_KUBELET_HELPER_BIN);
}

// Outcome is how a failed call ended.
struct Outcome {
  ErrorKind kind = ErrorKind::other;
  std::string message;
  milliseconds elapsed{};
};

// outcome runs fn, which must throw a kubelet::Error, and times it.
template <typename Fn>
Outcome outcome(Fn&& fn) {
  Outcome o;
  auto start = std::chrono::steady_clock::now();
  try {
    fn();
    FAIL("the call succeeded");
  } catch (const kubelet::Error& e) {
    o.kind = kubelet::kind_of(e);
    o.message = e.what();
  }
  o.elapsed = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  return o;
}

// check_outcome asserts type, socket and time of a call with a kBudget
// budget that met server, and that the server really did its part.
void check_outcome(const Outcome& o, const Fault& f, const RawSocketServer& server) {
  INFO(test::to_string(f.mode) << ": " << o.message << " after " << o.elapsed.count() << " ms");
  CHECK(to_string(o.kind) == to_string(f.kind));
  CHECK_THAT(o.message, Contains("`" + server.socket().string() + "`"));
  // A quiet peer is told from a slow one: the handshake never finished (a
  // helper that overran the deadline by more than its grace says only that).
  if (f.kind == ErrorKind::deadline) CHECK_THAT(o.message, Contains("no connection") || Contains("(helper killed)"));
  CHECK(o.elapsed < kBudget + kSlack);
  // A server that acts on a connection counts it first, so the client's
  // failure implies the count; a quiet server's accept may lag its client.
  bool acts = f.mode == RawMode::garbage || f.mode == RawMode::close_at_once || f.mode == RawMode::close_mid_stream;
  if (acts) CHECK(server.accepted() >= 1);
  if (f.mode == RawMode::close_mid_stream) CHECK(server.requests() >= 1);
}

// ---- a raw client, to check the server itself ----------------------------

// dial connects a new socket (of type SOCK_STREAM | flags) to path; -1
// with errno set when connect fails.
int dial(const fs::path& path, int flags = 0) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.native().size());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  int err = errno;
  ::close(fd);
  errno = err;
  return -1;
}

int connect_to(const fs::path& path) {
  int fd = dial(path);
  REQUIRE(fd >= 0);
  return fd;
}

// receive waits for what the server sends next: bytes, or "" at end of
// stream. The poll timeout only keeps a broken server from hanging the test.
std::string receive(int fd) {
  pollfd p{fd, POLLIN, 0};
  REQUIRE(::poll(&p, 1, 5000) == 1);
  char buf[256];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

void send_bytes(int fd, std::string_view bytes) {
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
}

// frame is an HTTP/2 frame header (payload not included).
std::string frame(std::size_t length, char type, char flags, char stream) {
  return {'\0', '\0', static_cast<char>(length), type, flags, '\0', '\0', '\0', stream};
}

}  // namespace

TEST_CASE("RawSocketServer: each mode behaves as it says, byte for byte") {
  test::TempDir tmp;
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  {
    RawSocketServer server(tmp / "garbage.sock", RawMode::garbage);
    int fd = connect_to(server.socket());
    send_bytes(fd, preface);
    CHECK(receive(fd).starts_with("HTTP/1.1 400"));
    ::close(fd);
  }
  {
    RawSocketServer server(tmp / "close.sock", RawMode::close_at_once);
    int fd = connect_to(server.socket());
    CHECK(receive(fd).empty());
    CHECK(server.accepted() == 1);
    ::close(fd);
  }
  {
    RawSocketServer server(tmp / "mid.sock", RawMode::close_mid_stream);
    int fd = connect_to(server.socket());
    CHECK(receive(fd) == frame(0, 4, 0, 0));  // server preface: empty SETTINGS
    send_bytes(fd, preface + frame(0, 4, 0, 0));
    CHECK(receive(fd) == frame(0, 4, 1, 0));    // SETTINGS ack
    send_bytes(fd, frame(3, 1, 4, 1) + "abc");  // HEADERS on stream 1
    CHECK(receive(fd).empty());
    CHECK(server.requests() == 1);
    ::close(fd);
  }
  for (RawMode quiet : {RawMode::silent, RawMode::backlog_only}) {
    RawSocketServer server(tmp / "quiet.sock", quiet);
    int fd = connect_to(server.socket());  // accepted, or queued in the backlog
    send_bytes(fd, preface);
    pollfd p{fd, POLLIN, 0};
    CHECK(::poll(&p, 1, 0) == 0);  // nothing sent, not closed
    ::close(fd);
  }
  CHECK_FALSE(fs::exists(tmp / "quiet.sock"));  // the destructor removes its socket
  {
    RawSocketServer server(tmp / "full.sock", RawMode::backlog_full);
    int fd = dial(server.socket(), SOCK_NONBLOCK);
    int err = errno;
    CHECK(fd == -1);
    CHECK(err == EAGAIN);  // refused at once, not queued
  }
}

TEST_CASE("misbehaving kubelet socket: pod_resources ends within its budget, typed, naming the socket") {
  auto kind = implementation();
  auto f = fault();
  INFO(kind << " client");
  test::TempDir tmp;
  RawSocketServer kubelet(kubelet::pod_resources_socket(tmp.path()), f.mode);
  auto client = make_client(kind, tmp.path());
  check_outcome(outcome([&] { client->pod_resources("ns", "pod", Budget(kBudget)); }), f, kubelet);
}

TEST_CASE("misbehaving plugin socket: Allocate and GetDevicePluginOptions end within their budget, typed") {
  auto kind = implementation();
  auto f = fault();
  INFO(kind << " client");
  test::TempDir tmp;
  RawSocketServer plugin(kubelet::device_plugin_dir(tmp.path()) / "bad.sock", f.mode);
  // A fresh client per call: each meets the socket on a new connection.
  check_outcome(
      outcome([&] {
        make_client(kind, tmp.path())->allocate(plugin.socket(), "example.com/gpu", {"GPU-1"}, Budget(kBudget));
      }),
      f, plugin);
  check_outcome(outcome([&] { make_client(kind, tmp.path())->plugin_options(plugin.socket(), Budget(kBudget)); }), f,
                plugin);
}

TEST_CASE("discovery: one misbehaving plugin socket neither hides the good plugin nor costs more than the probes") {
  auto kind = implementation();
  auto f = fault();
  INFO(kind << " client");
  test::TempDir tmp;
  fs::path dir = kubelet::device_plugin_dir(tmp.path());
  test::FakeDevicePlugin good(dir / "good.sock", {"GPU-1"});
  RawSocketServer bad(dir / "bad.sock", f.mode);
  auto client = make_client(kind, tmp.path());
  // Probes get a quarter of what is left: 300 ms of 1200.
  const milliseconds total = 4 * kBudget;
  auto start = std::chrono::steady_clock::now();
  CHECK(client->plugin_for_resource("example.com/gpu", "", {"GPU-1"}, Budget(total)) == good.socket());
  auto found = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
  INFO(test::to_string(f.mode) << ": found after " << found.count() << " ms");
  CHECK(found < kBudget + kSlack);

  auto plugins = client->list_plugins(Budget(kBudget));
  REQUIRE(plugins.size() == 2);
  CHECK(plugins[0].socket == bad.socket());
  CHECK_THAT(plugins[0].error, Contains("call ListAndWatch on `" + bad.socket().string() + "`"));
  CHECK(plugins[1].reachable());

  // Nobody lists GPU-9: a quiet socket might have, so that is a deadline;
  // a broken one answered (with its error), so it is not found.
  Outcome o = outcome([&] { client->plugin_for_resource("example.com/gpu", "", {"GPU-9"}, Budget(total)); });
  INFO(o.message << " after " << o.elapsed.count() << " ms");
  bool quiet = f.kind == ErrorKind::deadline;
  CHECK(to_string(o.kind) == to_string(quiet ? ErrorKind::deadline : ErrorKind::not_found));
  CHECK_THAT(o.message, Contains("bad.sock: call ListAndWatch on `" + bad.socket().string() + "`"));
  CHECK(o.elapsed < kBudget + kSlack);
}
