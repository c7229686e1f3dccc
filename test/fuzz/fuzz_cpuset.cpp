// SPDX-License-Identifier: Apache-2.0
// Fuzzes the cpuset list syntax (linux.resources.cpu.cpus / .mems, tenant
// input): the input is the list's text. A list that parses must hold only ids
// below the limit, sorted and each once, and its canonical form must parse
// back to the same set and be its own canonical form.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "specshim/base/error.h"
#include "specshim/modifiers/cpuset.h"

using namespace specshim::cpuset;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  IdSet ids;
  try {
    ids = parse_list("cpus", text, kMaxCpus);
  } catch (const specshim::Error&) {
    return 0;
  }
  if (!std::is_sorted(ids.begin(), ids.end()) || std::adjacent_find(ids.begin(), ids.end()) != ids.end()) std::abort();
  if (!ids.empty() && ids.back() >= kMaxCpus) std::abort();
  std::string canonical = format_list(ids);
  if (parse_list("cpus", canonical, kMaxCpus) != ids) std::abort();
  if (format_list(parse_list("cpus", canonical, kMaxCpus)) != canonical) std::abort();
  if (intersect(ids, ids) != ids || unite(ids, ids) != ids) std::abort();
  return 0;
}
