// SPDX-License-Identifier: Apache-2.0
// The one place that talks to libcap.
#include "specshim/base/caps.h"

#include <sys/capability.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "specshim/base/error.h"

namespace specshim::caps {
namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

std::string name_of(cap_value_t v) {
  std::unique_ptr<char, int (*)(void*)> text(cap_to_name(v), cap_free);
  if (!text) throw_errno("cap_to_name " + std::to_string(v));
  return upper(text.get());
}

cap_value_t value_of(std::string_view name) {
  std::string n(name);
  // cap_from_name also accepts bare numbers ("14"): a rule must say what it means.
  if (n.size() <= 4 || upper(n.substr(0, 4)) != "CAP_") throw Error("capability `" + n + "`: must be a CAP_ name");
  cap_value_t v = -1;
  if (cap_from_name(n.c_str(), &v) != 0) throw Error("unknown capability `" + n + "`");
  if (v >= cap_max_bits())
    throw Error("capability `" + n + "` is not supported by the running kernel (it knows up to " + kernel_last() + ")");
  return v;
}

}  // namespace

std::string canonical(std::string_view name) {
  return name_of(value_of(name));
}

std::string kernel_last() {
  return name_of(cap_max_bits() - 1);
}

Own own(std::string_view canonical_name) {
  cap_value_t v = value_of(canonical_name);
  std::unique_ptr<std::remove_pointer_t<cap_t>, int (*)(void*)> proc(cap_get_proc(), cap_free);
  if (!proc) throw_errno("read this process's capabilities");
  auto flag = [&](cap_flag_t which) {
    cap_flag_value_t set = CAP_CLEAR;
    if (cap_get_flag(proc.get(), v, which, &set) != 0)
      throw_errno("read capability `" + std::string(canonical_name) + "`");
    return set == CAP_SET;
  };
  return Own{flag(CAP_EFFECTIVE), flag(CAP_PERMITTED), cap_get_bound(v) == 1};
}

}  // namespace specshim::caps
