// SPDX-License-Identifier: Apache-2.0
// specshim/nri/frames.h: the multiplexer and ttRPC framings against bytes
// laid out by hand the way containerd's Go side writes them (big-endian
// headers, a message's first 4096 bytes in one frame and the rest in a
// second, several messages in one frame, frames cut across socket reads).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "test_support.h"
#include "specshim/nri/frames.h"

using nri_test::be32;
using nri_test::mux;
using nri_test::ttrpc_header;
using nri_test::ttrpc_message;
using specshim::nri::FrameError;
using specshim::nri::kMaxFrameBytes;
using specshim::nri::kMaxMessageBytes;
using specshim::nri::Message;
using specshim::nri::MessageReader;
using specshim::nri::MessageType;
using specshim::nri::MuxFrame;
using specshim::nri::MuxReader;

namespace {

// pattern is n bytes that are not all alike, so a shifted copy would differ.
std::string pattern(std::size_t n) {
  std::string out(n, '\0');
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<char>((i * 31 + i / 251) & 0xff);
  return out;
}

// drain takes every whole frame the reader holds.
std::vector<MuxFrame> drain(MuxReader& r) {
  std::vector<MuxFrame> out;
  while (auto f = r.next()) out.push_back(std::move(*f));
  return out;
}

std::vector<Message> drain(MessageReader& r) {
  std::vector<Message> out;
  while (auto m = r.next()) out.push_back(std::move(*m));
  return out;
}

// feed_in_pieces feeds bytes to r in pieces of the given sizes (the last
// piece takes what is left), draining after each one.
std::vector<Message> feed_in_pieces(MessageReader& r, std::string_view bytes, const std::vector<std::size_t>& sizes) {
  std::vector<Message> out;
  std::size_t at = 0;
  for (std::size_t i = 0; at < bytes.size(); ++i) {
    std::size_t n = i < sizes.size() ? sizes[i] : bytes.size() - at;
    r.feed(bytes.substr(at, n));
    at += std::min(n, bytes.size() - at);
    for (auto& m : drain(r)) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

TEST_CASE("nri frames: a ttRPC message Go split at 4096 bytes across two mux frames is reassembled") {
  std::string data = pattern(5000);
  std::string message = ttrpc_message(1, 1, data);  // 5010 bytes: Go writes [4096][914]
  std::string wire = mux(1, message.substr(0, 4096)) + mux(1, message.substr(4096));
  REQUIRE(wire.size() == 8 + 4096 + 8 + 914);

  MuxReader socket;
  socket.feed(wire);
  auto frames = drain(socket);
  REQUIRE(frames.size() == 2);
  CHECK(socket.pending() == 0);
  CHECK(frames[0].conn == 1);
  CHECK(frames[0].payload.size() == 4096);
  CHECK(frames[1].conn == 1);
  CHECK(frames[1].payload.size() == 914);

  MessageReader conn;
  conn.feed(frames[0].payload);
  CHECK_FALSE(conn.next());
  CHECK(conn.pending() == 4096);
  conn.feed(frames[1].payload);
  auto m = conn.next();
  REQUIRE(m);
  CHECK(m->stream == 1);
  CHECK(m->type == MessageType::request);
  CHECK(m->flags == 0);
  CHECK_FALSE(m->oversized);
  CHECK(m->data == data);
  CHECK_FALSE(conn.next());
  CHECK(conn.pending() == 0);
}

TEST_CASE("nri frames: several ttRPC messages joined in one mux frame come out one by one") {
  std::string joined = ttrpc_message(1, 1, "configure") + ttrpc_message(3, 2, "") + ttrpc_message(5, 3, "data", 0x04);
  MuxReader socket;
  socket.feed(mux(2, joined));
  auto frames = drain(socket);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].conn == 2);
  CHECK(frames[0].payload == joined);

  MessageReader conn;
  conn.feed(frames[0].payload);
  auto first = conn.next();
  REQUIRE(first);
  CHECK(first->stream == 1);
  CHECK(first->type == MessageType::request);
  CHECK(first->data == "configure");
  auto second = conn.next();
  REQUIRE(second);
  CHECK(second->stream == 3);
  CHECK(second->type == MessageType::response);
  CHECK(second->data.empty());
  auto third = conn.next();
  REQUIRE(third);
  CHECK(third->stream == 5);
  CHECK(third->type == MessageType::data);
  CHECK(third->flags == 0x04);
  CHECK(third->data == "data");
  CHECK_FALSE(conn.next());
  CHECK(conn.pending() == 0);
}

TEST_CASE("nri frames: mux frames fed byte by byte come out whole, each once its last byte came") {
  std::string first_payload = ttrpc_message(1, 1, "hello");
  std::string second_payload = ttrpc_message(1, 2, pattern(300));
  std::string first = mux(1, first_payload), second = mux(7, second_payload);
  std::string wire = first + second;

  MuxReader socket;
  std::vector<std::pair<std::size_t, MuxFrame>> got;  // bytes fed when each frame came out
  for (std::size_t i = 0; i < wire.size(); ++i) {
    socket.feed(wire.substr(i, 1));
    while (auto f = socket.next()) got.emplace_back(i + 1, std::move(*f));
  }
  REQUIRE(got.size() == 2);
  CHECK(got[0].first == first.size());
  CHECK(got[0].second.conn == 1);
  CHECK(got[0].second.payload == first_payload);
  CHECK(got[1].first == wire.size());
  CHECK(got[1].second.conn == 7);
  CHECK(got[1].second.payload == second_payload);
  CHECK(socket.pending() == 0);

  // The ttRPC stream of one connection, byte by byte, likewise.
  MessageReader conn;
  std::vector<Message> messages;
  for (char c : first_payload + second_payload) {
    conn.feed(std::string_view(&c, 1));
    for (auto& m : drain(conn)) messages.push_back(std::move(m));
  }
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].data == "hello");
  CHECK(messages[1].type == MessageType::response);
  CHECK(messages[1].data == pattern(300));
}

TEST_CASE("nri frames: a 3 MB message goes out as exactly [4096][rest] and reads back whole") {
  std::string data = pattern(3'000'000);
  std::string message = specshim::nri::message_bytes(7, MessageType::response, data);
  REQUIRE(message.size() == 10 + data.size());
  CHECK(message.substr(0, 10) == ttrpc_header(3'000'000, 7, 2));
  CHECK((message.substr(10) == data));

  auto frames = specshim::nri::mux_frames(1, message);
  REQUIRE(frames.size() == 2);
  REQUIRE(frames[0].size() == 8 + 4096);
  CHECK(frames[0].substr(0, 8) == be32(1) + be32(4096));
  CHECK((frames[0].substr(8) == message.substr(0, 4096)));
  std::size_t rest = message.size() - 4096;
  REQUIRE(frames[1].size() == 8 + rest);
  CHECK(frames[1].substr(0, 8) == be32(1) + be32(static_cast<std::uint32_t>(rest)));
  CHECK((frames[1].substr(8) == message.substr(4096)));

  MuxReader socket;
  MessageReader conn;
  std::vector<Message> got;
  for (const auto& f : frames) {
    socket.feed(f);
    for (auto& frame : drain(socket)) {
      CHECK(frame.conn == 1);
      conn.feed(frame.payload);
      for (auto& m : drain(conn)) got.push_back(std::move(m));
    }
  }
  REQUIRE(got.size() == 1);
  CHECK(got[0].stream == 7);
  CHECK(got[0].type == MessageType::response);
  CHECK_FALSE(got[0].oversized);
  CHECK(got[0].data.size() == data.size());
  CHECK((got[0].data == data));  // not decomposed: no 3 MB strings in a failure
}

TEST_CASE("nri frames: a message of at most 4096 bytes is one frame, byte for byte Go's") {
  std::string small = ttrpc_message(1, 2, "ok");
  auto frames = specshim::nri::mux_frames(2, small);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0] == mux(2, small));

  std::string exact = ttrpc_message(3, 1, pattern(4096 - 10));
  REQUIRE(exact.size() == 4096);
  frames = specshim::nri::mux_frames(1, exact);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0] == mux(1, exact));

  std::string one_more = ttrpc_message(3, 1, pattern(4096 - 9));
  frames = specshim::nri::mux_frames(1, one_more);
  REQUIRE(frames.size() == 2);
  CHECK(frames[0] == mux(1, one_more.substr(0, 4096)));
  CHECK(frames[1] == mux(1, one_more.substr(4096)));
}

TEST_CASE("nri frames: message_bytes writes ttRPC's header, big-endian, with the flags") {
  CHECK(specshim::nri::message_bytes(0x01020304, MessageType::request, "abc", 0x02) ==
        std::string("\x00\x00\x00\x03\x01\x02\x03\x04\x01\x02"
                    "abc",
                    13));
}

TEST_CASE("nri frames: a message over 4 MiB is reported once as oversized, skipped, and the next one is read") {
  const std::uint32_t size = static_cast<std::uint32_t>(kMaxMessageBytes) + 1;
  std::string big = ttrpc_header(size, 3, 1) + std::string(size, 'x');
  std::string after = ttrpc_message(5, 1, "next");
  std::string stream = big + after;

  // Pieces as the Go side's frames might come: a first 4096, then 1 MiB
  // pieces, one ending inside the oversized data a few bytes before the next
  // message's header, one cutting that header in two.
  std::vector<std::size_t> cuts;
  SECTION("in one piece") {}
  SECTION("in pieces") {
    cuts = {4096, 1 << 20, 1 << 20, 1 << 20, (1 << 20) - 4096 + 10 + 1 - 3, 3 + 5, 2, 1};
  }
  SECTION("the header alone first, then the rest") {
    cuts = {10, big.size() - 10};
  }
  SECTION("byte by byte around the end of the skipped data") {
    cuts = {big.size() - 2, 1, 1};
    for (std::size_t i = 0; i < after.size(); ++i) cuts.push_back(1);
  }
  CAPTURE(cuts);

  MessageReader conn;
  auto got = feed_in_pieces(conn, stream, cuts);
  REQUIRE(got.size() == 2);
  CHECK(got[0].oversized);
  CHECK(got[0].stream == 3);
  CHECK(got[0].type == MessageType::request);
  CHECK(got[0].data.empty());
  CHECK_FALSE(got[1].oversized);
  CHECK(got[1].stream == 5);
  CHECK(got[1].data == "next");
  CHECK(conn.pending() == 0);
}

TEST_CASE("nri frames: while an oversized message's data is still to come, pending() says so") {
  const std::uint32_t size = static_cast<std::uint32_t>(kMaxMessageBytes) + 100;
  MessageReader conn;
  conn.feed(ttrpc_header(size, 1, 1) + std::string(50, 'x'));
  auto m = conn.next();
  REQUIRE(m);
  CHECK(m->oversized);
  CHECK_FALSE(conn.next());  // reported once
  CHECK(conn.pending() != 0);
  conn.feed(std::string(size - 50, 'x'));
  CHECK_FALSE(conn.next());
  CHECK(conn.pending() == 0);
}

TEST_CASE("nri frames: a ttRPC message of an unknown type is a FrameError") {
  for (std::uint8_t type : {0, 4, 0xff}) {
    CAPTURE(static_cast<int>(type));
    MessageReader conn;
    conn.feed(ttrpc_message(1, type, "x"));
    CHECK_THROWS_AS(conn.next(), FrameError);
  }
}

TEST_CASE("nri frames: a mux frame longer than kMaxFrameBytes is a FrameError") {
  MuxReader over;
  over.feed(be32(1) + be32(static_cast<std::uint32_t>(kMaxFrameBytes) + 1));
  CHECK_THROWS_AS(over.next(), FrameError);

  MuxReader huge;
  huge.feed(be32(2) + be32(0xffffffff));
  CHECK_THROWS_AS(huge.next(), FrameError);

  // Go's largest frame, 4 MiB of data and a ttRPC header, is waited for.
  MuxReader largest;
  largest.feed(be32(1) + be32(static_cast<std::uint32_t>(kMaxFrameBytes)));
  CHECK_FALSE(largest.next());
  CHECK(largest.pending() == 8);
}

TEST_CASE("nri frames: a truncated frame is held: pending() non-zero and next() nullopt") {
  std::string frame = mux(1, ttrpc_message(1, 1, "configure"));
  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{8}, frame.size() - 1}) {
    CAPTURE(n);
    MuxReader socket;
    socket.feed(frame.substr(0, n));
    CHECK_FALSE(socket.next());
    CHECK(socket.pending() == n);
  }

  std::string message = ttrpc_message(1, 1, "configure");
  for (std::size_t n : {std::size_t{1}, std::size_t{9}, std::size_t{10}, message.size() - 1}) {
    CAPTURE(n);
    MessageReader conn;
    conn.feed(message.substr(0, n));
    CHECK_FALSE(conn.next());
    CHECK(conn.pending() == n);
  }
}

TEST_CASE("nri frames: message_bytes refuses data over kMaxMessageBytes") {
  std::string over(kMaxMessageBytes + 1, 'x');
  CHECK_THROWS_AS(specshim::nri::message_bytes(1, MessageType::response, over), FrameError);

  std::string largest(kMaxMessageBytes, 'x');
  auto bytes = specshim::nri::message_bytes(1, MessageType::response, largest);
  CHECK(bytes.size() == 10 + kMaxMessageBytes);
  CHECK(bytes.substr(0, 10) == ttrpc_header(static_cast<std::uint32_t>(kMaxMessageBytes), 1, 2));
}

TEST_CASE("nri frames: a long connection's frames keep coming out right past the buffer compaction") {
  // Many frames through one reader, in reads that never line up with them:
  // the consumed front is dropped now and then, the rest must stay intact.
  std::string wire;
  std::vector<std::string> payloads;
  for (std::uint32_t i = 0; i < 200; ++i) {
    payloads.push_back(ttrpc_message(2 * i + 1, 1, pattern(1000 + i * 7)));
    wire += mux(1, payloads.back());
  }
  MuxReader socket;
  MessageReader conn;
  std::vector<Message> got;
  std::size_t frames = 0;
  for (std::size_t at = 0; at < wire.size(); at += 1777) {
    socket.feed(std::string_view(wire).substr(at, 1777));
    for (auto& f : drain(socket)) {
      REQUIRE(frames < payloads.size());
      CHECK(f.payload == payloads[frames]);
      ++frames;
      conn.feed(f.payload);
      for (auto& m : drain(conn)) got.push_back(std::move(m));
    }
  }
  CHECK(frames == payloads.size());
  REQUIRE(got.size() == payloads.size());
  for (std::uint32_t i = 0; i < got.size(); ++i) {
    CHECK(got[i].stream == 2 * i + 1);
    CHECK(got[i].data == pattern(1000 + i * 7));
  }
}
