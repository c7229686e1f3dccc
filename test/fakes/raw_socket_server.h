// SPDX-License-Identifier: Apache-2.0
// RawSocketServer: a unix-socket server that misbehaves at the byte level,
// for proving that a client's call to a kubelet or device-plugin socket
// costs bounded time whatever is (or is not) at the other end. It speaks
// no gRPC: each mode is one way a peer can break the HTTP/2 connection.
#pragma once

#include <atomic>
#include <filesystem>
#include <string_view>
#include <thread>
#include <vector>

namespace specshim::test {

// RawMode is how the server treats every connection.
enum class RawMode {
  silent,            // accept, then never read nor write: the HTTP/2 handshake never completes
  garbage,           // accept, read the client's first bytes, answer an HTTP/1.1 400 (not HTTP/2), stay open
  close_at_once,     // accept and close before reading anything
  close_mid_stream,  // accept, send a server preface (SETTINGS), ack the client's SETTINGS, read up to
                     // the first request's HEADERS, then close before any response
  backlog_only,      // listen but never accept: connections wait in the listen backlog
  backlog_full,      // never accept, and the backlog is already full: connecting fails (EAGAIN)
};

std::string_view to_string(RawMode mode);

class RawSocketServer {
 public:
  // RawSocketServer listens on socket (any stale file there is replaced) and
  // serves every connection in mode on its own thread until destroyed.
  RawSocketServer(std::filesystem::path socket, RawMode mode);
  // The destructor wakes the thread through an eventfd, closes every
  // connection and removes the socket file.
  ~RawSocketServer();
  RawSocketServer(const RawSocketServer&) = delete;
  RawSocketServer& operator=(const RawSocketServer&) = delete;

  const std::filesystem::path& socket() const { return socket_; }
  RawMode mode() const { return mode_; }
  // accepted counts accepted connections; it is raised before the server
  // acts on one, so a client that saw the act sees the count.
  int accepted() const { return accepted_.load(); }
  // requests counts request HEADERS frames seen (close_mid_stream only),
  // raised before the connection is closed.
  int requests() const { return requests_.load(); }

 private:
  void serve();

  std::filesystem::path socket_;
  RawMode mode_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  std::vector<int> backlog_;  // backlog_full: the server's own connections filling the backlog
  std::atomic<int> accepted_{0};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

}  // namespace specshim::test
