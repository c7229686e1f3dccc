// SPDX-License-Identifier: Apache-2.0
// Error type and the nested-context convention used across specshim.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace specshim {

// Error is what every specshim failure throws. Messages are lowercase
// "verb `object`: cause" with no trailing period; context is added by
// catching and rethrowing with std::throw_with_nested(Error("context")).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// throw_errno throws an Error for a failed C call, capturing errno at once:
// throw_errno("open `/etc/passwd`") -> "open `/etc/passwd`: No such file or directory".
[[noreturn]] void throw_errno(std::string_view what);
[[noreturn]] void throw_errno(std::string_view what, int err);

// describe flattens an exception and its nested causes into one line,
// "outer: inner: innermost", the form containerd shows to the user.
std::string describe(const std::exception& e);

// json_cause returns a JSON library exception's message without its
// "[json.exception.type.N] " prefix.
std::string json_cause(const std::exception& e);

// join puts sep between items.
std::string join(const std::vector<std::string>& items, std::string_view sep);

// kListed is how many items a message lists before "… and N more": an item
// list can come from tenant input (annotations, pod specs), and the message
// travels to the kubelet's event.
inline constexpr std::size_t kListed = 10;

// join_some is join over at most `max` items, then "… and N more":
// join_some({"a", "b", "c"}, ", ", 2) is "a, b, … and 1 more".
std::string join_some(const std::vector<std::string>& items, std::string_view sep, std::size_t max = kListed);

// kMessageMax bounds a whole error message (runc's log line, containerd's
// error, the pod's event).
inline constexpr std::size_t kMessageMax = 4096;

// cap_message returns msg when it fits in max bytes, else its first bytes
// (never half a UTF-8 character) and a marker saying how long it was; the
// result is never longer than max (max is at least 64).
std::string cap_message(std::string_view msg, std::size_t max = kMessageMax);

// shown quotes tenant text for a message: JSON-escaped, cut to 120 bytes
// ("..." marks the cut).
std::string shown(std::string_view s);

// q puts a name in backticks for a message: q("/etc/passwd") is "`/etc/passwd`".
inline std::string q(std::string_view s) {
  return "`" + std::string(s) + "`";
}

// contains_control reports whether s has any byte < 0x20 or 0x7f.
bool contains_control(std::string_view s);

}  // namespace specshim
