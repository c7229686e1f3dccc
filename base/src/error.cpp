// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/error.h"

#include <cerrno>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>

namespace specshim {

void throw_errno(std::string_view what) {
  throw_errno(what, errno);
}

void throw_errno(std::string_view what, int err) {
  throw Error(std::string(what) + ": " + std::strerror(err));
}

std::string shown(std::string_view s) {
  std::string cut(s.substr(0, 120));
  return nlohmann::json(cut).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         (s.size() > 120 ? "..." : "");
}

namespace {
void append_nested(const std::exception& e, std::string& out) {
  if (!out.empty()) out += ": ";
  out += e.what();
  try {
    std::rethrow_if_nested(e);
  } catch (const std::exception& inner) {
    append_nested(inner, out);
  } catch (...) {
    out += ": unknown error";
  }
}
}  // namespace

std::string json_cause(const std::exception& e) {
  std::string msg = e.what();
  if (auto p = msg.find("] "); msg.rfind("[json.exception", 0) == 0 && p != std::string::npos) msg.erase(0, p + 2);
  return msg;
}

std::string describe(const std::exception& e) {
  std::string out;
  append_nested(e, out);
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

std::string join_some(const std::vector<std::string>& items, std::string_view sep, std::size_t max) {
  if (items.size() <= max) return join(items, sep);
  std::string out;
  for (std::size_t i = 0; i < max; ++i) (out += items[i]) += sep;
  return out + "\u2026 and " + std::to_string(items.size() - max) + " more";
}

std::string cap_message(std::string_view msg, std::size_t max) {
  if (msg.size() <= max) return std::string(msg);
  std::string marker = " \u2026 [message cut: " + std::to_string(msg.size()) + " bytes]";
  std::size_t keep = max > marker.size() ? max - marker.size() : 0;
  // Back up to the start of a character: continuation bytes are 10xxxxxx.
  while (keep > 0 && (static_cast<unsigned char>(msg[keep]) & 0xC0) == 0x80) --keep;
  return std::string(msg.substr(0, keep)) + marker;
}

bool contains_control(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

}  // namespace specshim
