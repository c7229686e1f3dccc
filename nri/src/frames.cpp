// SPDX-License-Identifier: Apache-2.0
#include "specshim/nri/frames.h"

#include <algorithm>

namespace specshim::nri {
namespace {

// compact drops the consumed front of buf once it is most of it, so a long
// connection's buffer stays the size of what is unread.
void compact(std::string& buf, std::size_t& pos) {
  if (pos == buf.size()) {
    buf.clear();
    pos = 0;
  } else if (pos > 64 * 1024 && pos * 2 > buf.size()) {
    buf.erase(0, pos);
    pos = 0;
  }
}

}  // namespace

std::uint32_t read_u32(const char* p) {
  auto b = [&](int i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

void append_u32(std::string& out, std::uint32_t v) {
  const char bytes[] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                        static_cast<char>(v)};
  out.append(bytes, 4);
}

std::optional<MuxFrame> MuxReader::next() {
  if (pending() < kMuxHeaderBytes) return std::nullopt;
  const char* h = buf_.data() + pos_;
  std::uint32_t conn = read_u32(h), size = read_u32(h + 4);
  if (size > kMaxFrameBytes)
    throw FrameError{"a multiplexer frame of " + std::to_string(size) + " bytes for connection " +
                     std::to_string(conn) + " (at most " + std::to_string(kMaxFrameBytes) + ")"};
  if (pending() < kMuxHeaderBytes + size) return std::nullopt;
  MuxFrame f{conn, buf_.substr(pos_ + kMuxHeaderBytes, size)};
  pos_ += kMuxHeaderBytes + size;
  compact(buf_, pos_);
  return f;
}

void MessageReader::feed(std::string_view bytes) {
  std::size_t dropped = std::min(skip_, bytes.size());
  skip_ -= dropped;
  buf_.append(bytes.substr(dropped));
}

std::optional<Message> MessageReader::next() {
  if (skip_ || buf_.size() - pos_ < kTtrpcHeaderBytes) return std::nullopt;
  const char* h = buf_.data() + pos_;
  std::uint32_t size = read_u32(h), stream = read_u32(h + 4);
  auto type = static_cast<unsigned char>(h[8]);
  auto flags = static_cast<std::uint8_t>(h[9]);
  if (type < 1 || type > 3)
    throw FrameError{"a ttRPC message of unknown type " + std::to_string(type) + " on stream " +
                     std::to_string(stream)};
  Message m{stream, static_cast<MessageType>(type), flags, {}, false};
  if (size > kMaxMessageBytes) {
    // Drop the data, held and still to come, and say so once.
    pos_ += kTtrpcHeaderBytes;
    std::size_t held = std::min<std::size_t>(size, buf_.size() - pos_);
    pos_ += held;
    skip_ = size - held;
    compact(buf_, pos_);
    m.oversized = true;
    return m;
  }
  if (buf_.size() - pos_ < kTtrpcHeaderBytes + size) return std::nullopt;
  m.data = buf_.substr(pos_ + kTtrpcHeaderBytes, size);
  pos_ += kTtrpcHeaderBytes + size;
  compact(buf_, pos_);
  return m;
}

std::string message_bytes(std::uint32_t stream, MessageType type, std::string_view data, std::uint8_t flags) {
  if (data.size() > kMaxMessageBytes)
    throw FrameError{"a ttRPC message of " + std::to_string(data.size()) + " bytes (at most " +
                     std::to_string(kMaxMessageBytes) + ")"};
  std::string out;
  out.reserve(kTtrpcHeaderBytes + data.size());
  append_u32(out, static_cast<std::uint32_t>(data.size()));
  append_u32(out, stream);
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  out.append(data);
  return out;
}

std::vector<std::string> mux_frames(std::uint32_t conn, std::string_view message) {
  std::vector<std::string> frames;
  auto frame = [&](std::string_view part) {
    std::string f;
    f.reserve(kMuxHeaderBytes + part.size());
    append_u32(f, conn);
    append_u32(f, static_cast<std::uint32_t>(part.size()));
    f.append(part);
    frames.push_back(std::move(f));
  };
  std::size_t first = std::min(message.size(), kGoReadBuffer);
  frame(message.substr(0, first));
  if (message.size() > first) frame(message.substr(first));
  return frames;
}

}  // namespace specshim::nri
