// SPDX-License-Identifier: Apache-2.0
#include "specshim/error.h"

#include <cerrno>
#include <cstring>
#include <exception>

namespace specshim {

void throw_errno(std::string_view what) { throw_errno(what, errno); }

void throw_errno(std::string_view what, int err) {
  throw Error(std::string(what) + ": " + std::strerror(err));
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

bool contains_control(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

}  // namespace specshim
