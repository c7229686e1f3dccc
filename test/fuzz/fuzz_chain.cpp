// SPDX-License-Identifier: Apache-2.0
// Fuzzes config.json load plus the full default chain on a scratch bundle
// (an empty rootfs), as `create` would run it, without writing anything.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "pipeline.h"
#include "specshim/error.h"

namespace {
std::filesystem::path scratch_bundle() {
  static std::filesystem::path dir = [] {
    std::string tmpl = "/tmp/specshim-fuzz-bundle-XXXXXX";
    if (!::mkdtemp(tmpl.data())) std::abort();
    std::filesystem::create_directories(std::filesystem::path(tmpl) / "rootfs" / "etc");
    return std::filesystem::path(tmpl);
  }();
  return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto bundle = scratch_bundle();
  {
    std::ofstream out(bundle / "config.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    auto doc = specshim::config::Document::parse("[cdi]\nspec-dirs = []\n", "fuzz.toml");
    auto root = doc.root();
    specshim::Context ctx;
    ctx.dry_run = true;
    ctx.allow_allocate = false;
    auto out = specshim::shim::load_and_modify(bundle, std::move(ctx), root);
    (void)out.spec.serialize();
  } catch (const std::exception&) {
  }
  return 0;
}
