// SPDX-License-Identifier: Apache-2.0
// Fuzzes [[patches]] on arbitrary specs: the input is a patches config and a
// config.json, split at the first NUL. A config that loads and a spec that
// parses must either fail with Error or give a spec that serializes, and a
// second chain run over the output must change nothing (the record).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "specshim/base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path bundle = specshim::fuzz::make_scratch("patches", {"rootfs"});
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto nul = in.find('\0');
  if (nul == std::string_view::npos) return 0;
  std::string config = "[chain]\norder = [\"patches\"]\n" + std::string(in.substr(0, nul));
  specshim::fuzz::write_bytes(bundle / "config.json", in.substr(nul + 1));
  std::string out;
  try {
    out = specshim::fuzz::dry_run(bundle, config).spec.serialize();
  } catch (const specshim::Error&) {
    return 0;
  }
  specshim::fuzz::write_bytes(bundle / "config.json", out);
  auto again = specshim::fuzz::dry_run(bundle, config);
  if (!again.result.changed_by.empty() || again.spec.serialize() != out) std::abort();
  return 0;
}
