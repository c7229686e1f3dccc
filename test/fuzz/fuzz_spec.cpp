// SPDX-License-Identifier: Apache-2.0
// Fuzzes the lossless spec DOM: parse must never crash, and what it writes
// must parse back to the same document and write the same text again.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "specshim/error.h"
#include "specshim/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto spec = specshim::Spec::parse(text);
    std::string once = spec.serialize();
    auto again = specshim::Spec::parse(once);
    if (again.json() != spec.json()) std::abort();
    if (again.serialize() != once) std::abort();
  } catch (const specshim::Error&) {
  }
  return 0;
}
