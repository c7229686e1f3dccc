// SPDX-License-Identifier: Apache-2.0
// The [cpuset] table.
#include "kubelet_modifier.h"
#include "specshim/modifiers/cpuset.h"

namespace specshim::cpuset {

Config read_table(config::Section& s, const KubeletKeys& kubelet) {
  auto c = read_enabled_kubelet_keys<Config>(s, kubelet);
  std::string on_error = s.string("on-error").value_or("fail");
  if (on_error != "fail" && on_error != "skip") s.fail("on-error", "must be \"fail\" or \"skip\"");
  c.on_error = on_error == "fail" ? OnError::fail : OnError::skip;
  return c;
}

std::optional<Config> read_config(config::Section& s, const KubeletKeys& kubelet) {
  Config c = read_table(s, kubelet);
  if (!c.enabled) return std::nullopt;
  return c;
}

}  // namespace specshim::cpuset
