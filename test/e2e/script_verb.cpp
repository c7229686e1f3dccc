// SPDX-License-Identifier: Apache-2.0
#include "script_verb.h"

#include <stdexcept>

namespace specshim::e2e {

test::ProcessResult script_verb(const std::string& script, const std::string& verb, const std::filesystem::path& dir,
                                const std::vector<std::string>& argv, int timeout_ms) {
  std::vector<std::string> full = {"/bin/bash", script, verb, dir.string()};
  full.insert(full.end(), argv.begin(), argv.end());
  return test::run_process(full, {}, timeout_ms);
}

std::string succeeded(const test::ProcessResult& r, const std::string& where, const std::vector<std::string>& argv) {
  if (r.exit_code == 0) return r.out;
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  throw std::runtime_error("in " + where + ": " + cmd + " exited " + std::to_string(r.exit_code) + ":\n" + r.out +
                           r.err);
}

}  // namespace specshim::e2e
