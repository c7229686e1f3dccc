// SPDX-License-Identifier: Apache-2.0
#include "specshim/kubelet/errors.h"

#include <array>
#include <utility>

namespace specshim::kubelet {

namespace {
constexpr std::array<std::pair<ErrorKind, std::string_view>, 5> kNames = {{
    {ErrorKind::other, "other"},
    {ErrorKind::unavailable, "unavailable"},
    {ErrorKind::deadline, "deadline"},
    {ErrorKind::not_found, "not-found"},
    {ErrorKind::protocol, "protocol"},
}};
}  // namespace

ErrorKind kind_of(const Error& e) {
  if (dynamic_cast<const Unavailable*>(&e)) return ErrorKind::unavailable;
  if (dynamic_cast<const DeadlineExceeded*>(&e)) return ErrorKind::deadline;
  if (dynamic_cast<const NotFound*>(&e)) return ErrorKind::not_found;
  if (dynamic_cast<const Protocol*>(&e)) return ErrorKind::protocol;
  return ErrorKind::other;
}

std::string_view to_string(ErrorKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  return "other";
}

ErrorKind error_kind_from(std::string_view name) {
  for (const auto& [k, n] : kNames)
    if (n == name) return k;
  return ErrorKind::other;
}

void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::unavailable:
      throw Unavailable(message);
    case ErrorKind::deadline:
      throw DeadlineExceeded(message);
    case ErrorKind::not_found:
      throw NotFound(message);
    case ErrorKind::protocol:
      throw Protocol(message);
    case ErrorKind::other:
      break;
  }
  throw Error(message);
}

std::string on_socket(std::string_view call, const std::string& socket) {
  return "call " + std::string(call) + " on `" + socket + "`";
}

}  // namespace specshim::kubelet
