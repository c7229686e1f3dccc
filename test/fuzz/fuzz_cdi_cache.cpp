// SPDX-License-Identifier: Apache-2.0
// Fuzzes the CDI parse cache's encoding two ways. The input as a spec file:
// its entry decodes to exactly what was parsed, or to the failure's message.
// The input as the body of an entry (after a valid header): decoding never
// crashes, and what it accepts encodes back to an entry that decodes the same.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "specshim/base/error.h"
#include "specshim/node/cdi_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace specshim;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  cdi::Parsed parsed;
  try {
    parsed = cdi::parse_spec(input, "");
  } catch (const Error& e) {
    parsed = cdi::ParseFailure{describe(e)};
  }
  auto encode = [](std::string_view text, std::string_view build, const cdi::Parsed& p) {
    return std::visit([&](const auto& v) { return cdi::encode_entry(text, build, v); }, p);
  };
  auto back = cdi::decode_entry(encode(input, "build", parsed), input, "build");
  if (!back || !(*back == parsed)) std::abort();

  constexpr std::string_view kText = "t", kBuild = "b";
  std::string entry = cdi::entry_header(kText, kBuild) + std::string(input);
  if (auto decoded = cdi::decode_entry(entry, kText, kBuild)) {
    auto again = cdi::decode_entry(encode(kText, kBuild, *decoded), kText, kBuild);
    if (!again || !(*again == *decoded)) std::abort();
  }
  return 0;
}
