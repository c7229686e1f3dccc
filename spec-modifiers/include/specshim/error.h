// SPDX-License-Identifier: Apache-2.0
// Error type and the nested-context convention used across specshim.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

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

// contains_control reports whether s has any byte < 0x20 or 0x7f.
bool contains_control(std::string_view s);

}  // namespace specshim
