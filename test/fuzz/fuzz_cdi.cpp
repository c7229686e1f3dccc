// SPDX-License-Identifier: Apache-2.0
// Fuzzes the CDI spec parser (YAML and JSON) and, for a spec that loads, the
// CDI modifier applying its devices through the chain twice: never a crash,
// and a second run over the output changes nothing (idempotence).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "specshim/base/error.h"
#include "specshim/node/cdi.h"

namespace {
namespace fs = std::filesystem;
using namespace specshim;

std::string request_all(const cdi::SpecFile& spec) {
  std::string names;
  std::size_t n = 0;
  for (const auto& d : spec.devices) {
    if (n++ == 4) break;
    if (!names.empty()) names += ',';
    names += spec.kind + "=" + d.name;
  }
  return names;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c < 0x20) continue;  // names never hold control characters; drop them
    out += static_cast<char>(c);
  }
  return out + "\"";
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  cdi::SpecFile spec;
  try {
    spec = cdi::parse_spec(text, "fuzz.yaml");
    (void)cdi::minimum_version(spec);
  } catch (const Error&) {
    return 0;
  }
  std::string names = request_all(spec);
  if (names.empty()) return 0;

  static const fs::path dir = fuzz::make_scratch("cdi", {"bundle/rootfs", "cdi"});
  fuzz::write_bytes(dir / "cdi" / "fuzz.yaml", text);
  fuzz::write_bytes(
      dir / "bundle" / "config.json",
      R"({"ociVersion":"1.0.2","process":{"args":["sh"],"cwd":"/","env":["A=1"]},"root":{"path":"rootfs"},)"
      R"("annotations":{"cdi.k8s.io/fuzz":)" +
          json_string(names) + "}}");
  // The parse cache is fuzzed on its own (fuzz_cdi_cache.cpp).
  std::string config = "[chain]\norder = [\"cdi\"]\n[cdi]\ncache-dir = \"\"\nspec-dirs = [" +
                       json_string((dir / "cdi").string()) + "]\n";
  try {
    auto first = fuzz::dry_run(dir / "bundle", config);
    // Idempotence: the same chain on its own output changes nothing.
    fuzz::write_bytes(dir / "bundle" / "config.json", first.spec.serialize());
    auto second = fuzz::dry_run(dir / "bundle", config);
    if (second.spec.json() != first.spec.json()) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
