// SPDX-License-Identifier: Apache-2.0
// Fuzzes runc argv parsing: the input is argv[1..] separated by NUL bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "argv.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> argv{"specshim"};
  std::string cur;
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0)
      argv.push_back(std::move(cur)), cur.clear();
    else
      cur += static_cast<char>(data[i]);
  }
  argv.push_back(cur);
  auto r = specshim::shim::parse_runc_args(argv);
  // Only the verbs that start a container from the bundle go through the chain.
  if (r.modifies() && r.subcommand != "create" && r.subcommand != "run" && r.subcommand != "restore") std::abort();
  if (r.modifies() && r.container_id.empty() && r.unknown_flags.empty() && argv.size() > 64) std::abort();
  if (r.subcommand_index >= argv.size() && !r.subcommand.empty()) std::abort();
  return 0;
}
