// SPDX-License-Identifier: Apache-2.0
#include "raw_socket_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace specshim::test {

namespace fs = std::filesystem;

namespace {

// What an HTTP/2 client sends first (RFC 9113 §3.4), before its SETTINGS.
constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// What an HTTP/1.1 server says to an HTTP/2 preface: plausible bytes that
// are no HTTP/2 frame (read as one, its type is 'P', not SETTINGS).
constexpr std::string_view kHttp1Reply = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
constexpr std::size_t kFrameHeaderBytes = 9;
constexpr unsigned char kHeadersFrame = 0x1;
constexpr unsigned char kSettingsFrame = 0x4;
constexpr unsigned char kAckFlag = 0x1;

[[noreturn]] void fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// empty_frame is an HTTP/2 frame without payload on stream 0.
std::string empty_frame(unsigned char type, unsigned char flags) {
  return std::string{'\0', '\0', '\0', static_cast<char>(type), static_cast<char>(flags), '\0', '\0', '\0', '\0'};
}

// send_all writes what fits; a client that went away is no error here.
void send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Connection is one accepted client and the bytes read from it not yet
// parsed.
struct Connection {
  int fd = -1;
  std::string in;
  bool preface_read = false;
  bool answered = false;
};

// fill_backlog connects to the listener at addr until the kernel refuses,
// and returns the connections: the next client's connect fails at once, as
// with a plugin stuck long enough for its backlog to fill.
std::vector<int> fill_backlog(const sockaddr_un& addr) {
  std::vector<int> fds;
  for (;;) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) fail("socket");
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      fds.push_back(fd);
      continue;
    }
    int err = errno;
    ::close(fd);
    if (err == EAGAIN) return fds;
    errno = err;
    fail(std::string("connect ") + addr.sun_path);
  }
}

// Mid-stream: parse the client's frames; ack its SETTINGS so the start
// looks valid, and report true at the first request's HEADERS.
bool request_arrived(Connection& c) {
  if (!c.preface_read) {
    if (c.in.size() < kClientPreface.size()) return false;
    c.in.erase(0, kClientPreface.size());
    c.preface_read = true;
  }
  while (c.in.size() >= kFrameHeaderBytes) {
    auto byte = [&](std::size_t i) { return static_cast<unsigned char>(c.in[i]); };
    std::size_t length = (std::size_t{byte(0)} << 16) | (std::size_t{byte(1)} << 8) | byte(2);
    if (c.in.size() < kFrameHeaderBytes + length) return false;
    unsigned char type = byte(3), flags = byte(4);
    if (type == kHeadersFrame) return true;
    if (type == kSettingsFrame && !(flags & kAckFlag)) send_all(c.fd, empty_frame(kSettingsFrame, kAckFlag));
    c.in.erase(0, kFrameHeaderBytes + length);
  }
  return false;
}

// read_from handles what one connection sent, in mode; false when the
// connection is to be closed (the client hung up, or close_mid_stream saw
// the request, counted in requests first).
bool read_from(Connection& c, RawMode mode, std::atomic<int>& requests) {
  char buf[4096];
  ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  if (mode == RawMode::garbage) {
    if (!c.answered) send_all(c.fd, kHttp1Reply), c.answered = true;
    return true;  // the rest is read and dropped, so the client never blocks writing
  }
  c.in.append(buf, static_cast<std::size_t>(n));
  if (!request_arrived(c)) return true;
  requests.fetch_add(1);
  return false;
}

}  // namespace

std::string_view to_string(RawMode mode) {
  switch (mode) {
    case RawMode::silent:
      return "silent";
    case RawMode::garbage:
      return "garbage";
    case RawMode::close_at_once:
      return "close-at-once";
    case RawMode::close_mid_stream:
      return "close-mid-stream";
    case RawMode::backlog_only:
      return "backlog-only";
    case RawMode::backlog_full:
      return "backlog-full";
  }
  return "?";
}

RawSocketServer::RawSocketServer(fs::path socket, RawMode mode) : socket_(std::move(socket)), mode_(mode) {
  fs::create_directories(socket_.parent_path());
  fs::remove(socket_);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_.native().size() >= sizeof addr.sun_path)
    throw std::length_error("socket path too long: " + socket_.string());
  std::memcpy(addr.sun_path, socket_.c_str(), socket_.native().size());
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0) fail("socket");
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind " + socket_.string());
  if (::listen(listen_fd_, mode_ == RawMode::backlog_full ? 0 : 16) != 0) fail("listen " + socket_.string());
  if (mode_ == RawMode::backlog_full) backlog_ = fill_backlog(addr);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) fail("eventfd");
  thread_ = std::thread([this] { serve(); });
}

RawSocketServer::~RawSocketServer() {
  std::uint64_t one = 1;
  while (::write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
  thread_.join();
  ::close(stop_fd_);
  ::close(listen_fd_);
  for (int fd : backlog_) ::close(fd);
  std::error_code ec;
  fs::remove(socket_, ec);
}

void RawSocketServer::serve() {
  std::vector<Connection> conns;
  // Silent connections are held, never polled: nothing is read from them.
  bool reads = mode_ == RawMode::garbage || mode_ == RawMode::close_mid_stream;
  bool accepts = mode_ != RawMode::backlog_only && mode_ != RawMode::backlog_full;
  for (;;) {
    std::vector<pollfd> fds{{stop_fd_, POLLIN, 0}};
    if (accepts) fds.push_back({listen_fd_, POLLIN, 0});
    std::size_t first_conn = fds.size();
    if (reads)
      for (const auto& c : conns) fds.push_back({c.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) break;

    // Connections first (their indexes match fds), then a new one.
    std::vector<Connection> kept;
    for (std::size_t i = 0; i < conns.size(); ++i) {
      bool open = !reads || !fds[first_conn + i].revents || read_from(conns[i], mode_, requests_);
      if (open)
        kept.push_back(std::move(conns[i]));
      else
        ::close(conns[i].fd);
    }
    conns = std::move(kept);

    if (!accepts || !fds[1].revents) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    accepted_.fetch_add(1);
    if (mode_ == RawMode::close_at_once) {
      ::close(fd);
      continue;
    }
    if (mode_ == RawMode::close_mid_stream) send_all(fd, empty_frame(kSettingsFrame, 0));
    conns.emplace_back().fd = fd;
  }
  for (const auto& c : conns) ::close(c.fd);
}

}  // namespace specshim::test
