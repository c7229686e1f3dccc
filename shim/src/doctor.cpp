// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <iostream>

#include "runtime.h"
#include "settings.h"
#include "specshim/error.h"
#include "specshim/registry.h"
#include "verbs.h"

namespace specshim::shim {

int doctor_main(const std::vector<std::string>& argv) {
  std::string config_file = config::path_from_env().string();
  for (std::size_t i = 2; i + 1 < argv.size(); ++i)
    if (argv[i] == "--config") config_file = argv[i + 1];
  int problems = 0;
  try {
    auto doc = config::Document::load(config_file);
    auto root = doc.root();
    Settings s = read_settings(root);
    Chain chain = build_chain(root);
    root.finish();
    std::cout << "ok   config " << config_file << (doc.exists() ? "" : " (absent: defaults)") << "\n";
    try {
      std::cout << "ok   runtime " << find_runtime(s.runtime_path) << "\n";
    } catch (const std::exception& e) {
      std::cout << "FAIL runtime: " << describe(e) << "\n";
      ++problems;
    }
  } catch (const std::exception& e) {
    std::cout << "FAIL config: " << describe(e) << "\n";
    ++problems;
  }
  return problems ? 1 : 0;
}

}  // namespace specshim::shim
