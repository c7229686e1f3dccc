// SPDX-License-Identifier: Apache-2.0
// Fuzzes config.json load plus the full default chain on a scratch bundle
// (an empty rootfs), as `create` would run it, without writing anything.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_support.h"
#include "specshim/base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path bundle = specshim::fuzz::make_scratch("bundle", {"rootfs/etc"});
  specshim::fuzz::write_bytes(bundle / "config.json", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    auto out = specshim::fuzz::dry_run(bundle, "[cdi]\nspec-dirs = []\n");
    (void)out.spec.serialize();
  } catch (const std::exception&) {
  }
  return 0;
}
