// SPDX-License-Identifier: Apache-2.0
// Fuzzes the CDI parse cache's encoding two ways. The input as a spec file:
// when it parses, its entry decodes to exactly what was parsed. The input as
// the body of an entry (after a valid header): decoding never crashes, and
// what it accepts encodes back to an entry that decodes to the same spec.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "specshim/cdi_cache.h"
#include "specshim/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace specshim;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    cdi::SpecFile spec = cdi::parse_spec(input, "");
    auto back = cdi::decode_entry(cdi::encode_entry(input, "build", spec), input, "build");
    if (!back || !(*back == spec)) std::abort();
  } catch (const Error&) {
  }

  constexpr std::string_view kText = "t", kBuild = "b";
  std::string entry = cdi::entry_header(kText, kBuild) + std::string(input);
  if (auto spec = cdi::decode_entry(entry, kText, kBuild)) {
    auto again = cdi::decode_entry(cdi::encode_entry(kText, kBuild, *spec), kText, kBuild);
    if (!again || !(*again == *spec)) std::abort();
  }
  return 0;
}
