// SPDX-License-Identifier: Apache-2.0
// The two framings on an NRI socket, as containerd's Go side writes and reads
// them (docs/nri.md, "Wire"):
//
//   multiplexer frame:  u32 conn id | u32 length | payload        (big-endian)
//   ttRPC message:      u32 length | u32 stream id | u8 type | u8 flags | data
//
// The socket carries multiplexer frames. Each logical connection's payloads,
// joined, are a stream of ttRPC messages: a message may be split across
// frames and a frame may hold several messages. Connection 1 is the plugin's
// server (the runtime calls Configure, CreateContainer…), connection 2 the
// runtime's (the plugin calls RegisterPlugin). Only bytes here, no protobuf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specshim::nri {

inline constexpr std::uint32_t kPluginConn = 1;   // the runtime calls the plugin
inline constexpr std::uint32_t kRuntimeConn = 2;  // the plugin calls the runtime
inline constexpr std::size_t kMuxHeaderBytes = 8;
inline constexpr std::size_t kTtrpcHeaderBytes = 10;
// kMaxMessageBytes is ttRPC's limit on a message's data (Go: messageLengthMax).
inline constexpr std::size_t kMaxMessageBytes = 4 << 20;
// kMaxFrameBytes caps one multiplexer frame read (Go writes at most 4 MiB
// plus a ttRPC header in one).
inline constexpr std::size_t kMaxFrameBytes = kMaxMessageBytes + kTtrpcHeaderBytes;
// kGoReadBuffer: the Go reader hands a frame to ttRPC's 4096-byte bufio
// reader in one read, so a first frame larger than this kills the connection.
inline constexpr std::size_t kGoReadBuffer = 4096;

// FrameError is a framing the reader cannot go on from: the connection is done.
struct FrameError {
  std::string what;
};

// MuxFrame is one multiplexer frame.
struct MuxFrame {
  std::uint32_t conn = 0;
  std::string payload;
};

// MuxReader splits the socket's bytes into multiplexer frames.
class MuxReader {
 public:
  // feed appends bytes read from the socket.
  void feed(std::string_view bytes) { buf_.append(bytes); }
  // next returns the next whole frame, or nullopt until more bytes come.
  // A frame longer than kMaxFrameBytes is a FrameError (thrown).
  std::optional<MuxFrame> next();
  // pending is how many bytes of an unfinished frame are held: at EOF,
  // non-zero means the peer cut a frame short.
  std::size_t pending() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  std::size_t pos_ = 0;
};

enum class MessageType : std::uint8_t { request = 1, response = 2, data = 3 };

// Message is one ttRPC message. oversized: its length was over
// kMaxMessageBytes and its data was skipped (data is empty); the receiver
// answers a request with ResourceExhausted, as Go's server does.
struct Message {
  std::uint32_t stream = 0;
  MessageType type = MessageType::request;
  std::uint8_t flags = 0;
  std::string data;
  bool oversized = false;
};

// MessageReader splits one connection's byte stream into ttRPC messages.
class MessageReader {
 public:
  void feed(std::string_view bytes);
  // next returns the next whole message, or nullopt until more bytes come.
  // An unknown message type is a FrameError (thrown).
  std::optional<Message> next();
  std::size_t pending() const { return buf_.size() - pos_ + (skip_ ? 1 : 0); }

 private:
  std::string buf_;
  std::size_t pos_ = 0;
  std::size_t skip_ = 0;  // bytes of an oversized message still to drop
};

// message_bytes frames data as one ttRPC message. Throws FrameError when
// data is over kMaxMessageBytes.
std::string message_bytes(std::uint32_t stream, MessageType type, std::string_view data, std::uint8_t flags = 0);

// mux_frames wraps one ttRPC message for connection conn the way a Go
// plugin's writes come out: the first min(size, 4096) bytes in one frame,
// the rest (if any) in a second. Smaller first frames would also be read,
// but a message over 1 MiB cut into 4096-byte frames overflows the Go
// reader's 256-frame queue; one larger first frame is refused outright.
std::vector<std::string> mux_frames(std::uint32_t conn, std::string_view message);

// Big-endian helpers, shared by both readers and their tests.
std::uint32_t read_u32(const char* p);
void append_u32(std::string& out, std::uint32_t v);

}  // namespace specshim::nri
