// SPDX-License-Identifier: Apache-2.0
#include "hook_state.h"

#include <unistd.h>

#include <cerrno>

#include "specshim/base/error.h"
#include "specshim/base/spec.h"

namespace specshim::shim {
namespace {

constexpr std::size_t kMaxStateBytes = 1 << 20;

std::string read_stdin() {
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("read the container's state from stdin");
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxStateBytes) throw Error("the container's state on stdin is over 1 MiB");
  }
}

}  // namespace

HookState read_hook_state() {
  Json state = parse_json(read_stdin(), "parse the container's state on stdin");
  HookState s;
  if (auto id = state.value("id", ""); !id.empty()) s.id = std::move(id);
  s.bundle = state.value("bundle", "");
  if (s.bundle.empty() || s.bundle[0] != '/')
    throw Error("the state's bundle `" + s.bundle + "` is not an absolute path");
  return s;
}

}  // namespace specshim::shim
