// SPDX-License-Identifier: Apache-2.0
// Fuzzes the TOML config loader and the strict readers of every modifier.
#include <cstdint>
#include <string_view>

#include "specshim/config.h"
#include "specshim/error.h"
#include "specshim/registry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto doc = specshim::config::Document::parse(text, "fuzz.toml");
    auto root = doc.root();
    auto chain = specshim::build_chain(root);
  } catch (const specshim::Error&) {
  }
  return 0;
}
