// SPDX-License-Identifier: Apache-2.0
// Fuzzes what specshim-nri reads off a runtime's NRI socket (frames.h): the
// input's bytes come in reads cut where the input says, go through the
// multiplexer reader, each connection's payloads through its own ttRPC
// reader, and each message's data through the protobuf decoders the session
// uses (ttrpc::Request, then the CreateContainer request it carries). Only
// FrameError may end a run: a crash, a leak or a broken invariant is a bug.
//
// Input: one byte n (taken mod 8), then n bytes each giving a read's size
// (the byte + 1), used in turn; the rest is the socket's bytes. n == 0 feeds
// them in one read.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api.pb.h"
#include "specshim/nri/frames.h"
#include "ttrpc.pb.h"

namespace {

using specshim::nri::FrameError;
using specshim::nri::Message;
using specshim::nri::MessageReader;
using specshim::nri::MuxReader;

void check(bool ok) {
  if (!ok) std::abort();
}

// take decodes one message as the session would.
void take(const Message& m) {
  check(!m.oversized || m.data.empty());
  check(m.data.size() <= specshim::nri::kMaxMessageBytes);
  check(m.type == specshim::nri::MessageType::request || m.type == specshim::nri::MessageType::response ||
        m.type == specshim::nri::MessageType::data);
  if (m.oversized) return;

  // Written back the way the plugin writes, it reads back the same.
  auto frames = specshim::nri::mux_frames(1, specshim::nri::message_bytes(m.stream, m.type, m.data, m.flags));
  check(!frames.empty() && frames.size() <= 2);
  check(frames[0].size() <= specshim::nri::kMuxHeaderBytes + specshim::nri::kGoReadBuffer);
  MuxReader mux;
  MessageReader conn;
  for (const auto& f : frames) mux.feed(f);
  while (auto f = mux.next()) conn.feed(f->payload);
  auto again = conn.next();
  check(again && again->stream == m.stream && again->type == m.type && again->flags == m.flags &&
        again->data == m.data && !again->oversized && !conn.next() && conn.pending() == 0 && mux.pending() == 0);

  ttrpc::Request req;
  if (req.ParseFromString(m.data)) {
    ::nri::pkg::api::v1alpha1::CreateContainerRequest create;
    if (create.ParseFromString(req.payload())) (void)create.ByteSizeLong();
  }
  ::nri::pkg::api::v1alpha1::CreateContainerRequest direct;
  (void)direct.ParseFromString(m.data);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.empty()) return 0;
  std::size_t n = static_cast<unsigned char>(in[0]) % 8;
  in.remove_prefix(1);
  if (in.size() < n) return 0;
  std::vector<std::size_t> reads;
  for (std::size_t i = 0; i < n; ++i) reads.push_back(static_cast<unsigned char>(in[i]) + 1u);
  in.remove_prefix(n);

  MuxReader mux;
  std::map<std::uint32_t, MessageReader> conns;
  try {
    for (std::size_t i = 0; !in.empty(); ++i) {
      std::size_t len = reads.empty() ? in.size() : std::min(reads[i % reads.size()], in.size());
      mux.feed(in.substr(0, len));
      in.remove_prefix(len);
      while (auto frame = mux.next()) {
        check(frame->payload.size() <= specshim::nri::kMaxFrameBytes);
        auto& conn = conns[frame->conn];
        conn.feed(frame->payload);
        while (auto m = conn.next()) take(*m);
      }
    }
  } catch (const FrameError&) {
  }
  return 0;
}
