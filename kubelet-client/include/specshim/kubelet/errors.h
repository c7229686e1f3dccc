// SPDX-License-Identifier: Apache-2.0
// The errors kubelet-client throws. Every message names the call and the
// socket (or file): "call Allocate on `/var/lib/kubelet/device-plugins/x.sock`:
// unavailable: connection refused". Callers decide policy by type, e.g. a
// modifier may tolerate Unavailable but never Protocol.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace specshim::kubelet {

// Error is the base of every kubelet-client failure. Thrown as is when a
// server refused a call for a reason none of the subclasses cover (a plugin
// answering Allocate with an error, say).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Unavailable: nobody answered (socket missing or dead, connection refused,
// rate limited after the retry).
class Unavailable : public Error {
 public:
  using Error::Error;
};

// DeadlineExceeded: the create's budget ran out before the answer came.
class DeadlineExceeded : public Error {
 public:
  using Error::Error;
};

// NotFound: the server answered, but what was asked for does not exist (an
// unknown pod, no plugin serving the devices).
class NotFound : public Error {
 public:
  using Error::Error;
};

// Protocol: an answer or file that breaks the contract (wrong number of
// container responses, malformed checkpoint, helper speaking nonsense).
class Protocol : public Error {
 public:
  using Error::Error;
};

// ErrorKind names the classes above, for carrying an error across a process
// boundary (the specshim-kubelet helper).
enum class ErrorKind { other, unavailable, deadline, not_found, protocol };

ErrorKind kind_of(const Error& e);
std::string_view to_string(ErrorKind kind);
ErrorKind error_kind_from(std::string_view name);  // unknown names -> other
[[noreturn]] void throw_error(ErrorKind kind, const std::string& message);

// on_socket formats the common prefix: "call Get on `/path/kubelet.sock`".
std::string on_socket(std::string_view call, const std::string& socket);

}  // namespace specshim::kubelet
