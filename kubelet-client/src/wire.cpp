// SPDX-License-Identifier: Apache-2.0
// A small protobuf wire-format decoder for v1beta1.ContainerAllocateResponse
// and a strict base64 decoder: enough to read the checkpoint's AllocResp in
// the shim without loading protobuf. Checked against bytes made by the real
// protobuf library in test/unit/kubelet_wire_test.cpp.
#include "specshim/kubelet/wire.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "specshim/kubelet/errors.h"

namespace specshim::kubelet {

namespace {

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

// Reader walks one message's bytes; every read checks the bounds.
class Reader {
 public:
  Reader(std::string_view bytes, std::string_view what) : data_(bytes), what_(what) {}

  bool done() const { return pos_ == data_.size(); }

  std::uint64_t varint() {
    std::uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) fail("truncated varint");
      auto byte = static_cast<std::uint8_t>(data_[pos_++]);
      value |= std::uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    fail("varint longer than 10 bytes");
  }

  std::string_view bytes() {
    std::uint64_t len = varint();
    if (len > data_.size() - pos_) fail("length " + std::to_string(len) + " runs past the end");
    auto out = data_.substr(pos_, len);
    pos_ += len;
    return out;
  }

  void skip(std::uint32_t wire_type) {
    switch (wire_type) {
      case kVarint:
        varint();
        return;
      case kFixed64:
        advance(8);
        return;
      case kLength:
        bytes();
        return;
      case kFixed32:
        advance(4);
        return;
      default:
        fail("unsupported wire type " + std::to_string(wire_type));
    }
  }

  // field reads the next tag: field number and wire type.
  std::pair<std::uint64_t, std::uint32_t> field() {
    std::uint64_t tag = varint();
    if ((tag >> 3) == 0) fail("field number 0");
    return {tag >> 3, static_cast<std::uint32_t>(tag & 7)};
  }

  // string reads a length-delimited field as a string; protobuf itself
  // rejects a known field with any other wire type, and so does this.
  std::string string(std::uint32_t wire_type, std::uint64_t field) {
    expect(wire_type, kLength, field);
    return std::string(bytes());
  }

  bool boolean(std::uint32_t wire_type, std::uint64_t field) {
    expect(wire_type, kVarint, field);
    return varint() != 0;
  }

  void expect(std::uint32_t got, std::uint32_t want, std::uint64_t field) const {
    if (got != want) fail("field " + std::to_string(field) + " has wire type " + std::to_string(got));
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw Protocol(std::string(what_) + ": " + why + " at byte " + std::to_string(pos_));
  }

 private:
  void advance(std::size_t n) {
    if (n > data_.size() - pos_) fail("truncated fixed-width field");
    pos_ += n;
  }

  std::string_view data_;
  std::string_view what_;
  std::size_t pos_ = 0;
};

// each_field walks a message: on(reader, field, wire_type) reads the fields
// it knows and returns false for the rest, which are skipped.
template <typename On>
void each_field(std::string_view bytes, std::string_view what, On&& on) {
  Reader r(bytes, what);
  while (!r.done()) {
    auto [field, wt] = r.field();
    if (!on(r, field, wt)) r.skip(wt);
  }
}

std::pair<std::string, std::string> decode_map_entry(std::string_view bytes) {
  std::pair<std::string, std::string> kv;
  each_field(bytes, "map entry", [&](Reader& r, std::uint64_t field, std::uint32_t wt) {
    if (field == 1)
      kv.first = r.string(wt, field);
    else if (field == 2)
      kv.second = r.string(wt, field);
    else
      return false;
    return true;
  });
  return kv;
}

Mount decode_mount(std::string_view bytes) {
  Mount m;
  each_field(bytes, "Mount", [&](Reader& r, std::uint64_t field, std::uint32_t wt) {
    if (field == 1)
      m.container_path = r.string(wt, field);
    else if (field == 2)
      m.host_path = r.string(wt, field);
    else if (field == 3)
      m.read_only = r.boolean(wt, field);
    else
      return false;
    return true;
  });
  return m;
}

DeviceSpec decode_device(std::string_view bytes) {
  DeviceSpec d;
  each_field(bytes, "DeviceSpec", [&](Reader& r, std::uint64_t field, std::uint32_t wt) {
    if (field == 1)
      d.container_path = r.string(wt, field);
    else if (field == 2)
      d.host_path = r.string(wt, field);
    else if (field == 3)
      d.permissions = r.string(wt, field);
    else
      return false;
    return true;
  });
  return d;
}

std::string decode_cdi_device(std::string_view bytes) {
  std::string name;
  each_field(bytes, "CDIDevice", [&](Reader& r, std::uint64_t field, std::uint32_t wt) {
    if (field != 1) return false;
    name = r.string(wt, field);
    return true;
  });
  return name;
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

AllocateResponse decode_allocate_response(std::string_view bytes) {
  AllocateResponse out;
  each_field(bytes, "ContainerAllocateResponse", [&](Reader& r, std::uint64_t field, std::uint32_t wt) {
    if (field < 1 || field > 5) return false;
    r.expect(wt, kLength, field);
    std::string_view sub = r.bytes();
    if (field == 1 || field == 4) {
      auto [k, v] = decode_map_entry(sub);
      (field == 1 ? out.envs : out.annotations).insert_or_assign(std::move(k), std::move(v));
    } else if (field == 2) {
      out.mounts.push_back(decode_mount(sub));
    } else if (field == 3) {
      out.devices.push_back(decode_device(sub));
    } else {
      out.cdi_devices.push_back(decode_cdi_device(sub));
    }
    return true;
  });
  return out;
}

std::string base64_decode(std::string_view text) {
  // Go pads to a multiple of four; unpadded text is accepted as well.
  if (text.size() % 4 == 0)
    for (int pad = 0; pad < 2 && !text.empty() && text.back() == '='; ++pad) text.remove_suffix(1);
  if (text.size() % 4 == 1) throw Protocol("base64: length " + std::to_string(text.size()) + " is impossible");
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    int v = base64_value(text[i]);
    if (v < 0) throw Protocol("base64: invalid character at offset " + std::to_string(i));
    acc = (acc << 6) | std::uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

}  // namespace specshim::kubelet
