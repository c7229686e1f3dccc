// SPDX-License-Identifier: Apache-2.0
// specshim's entry point: runc's command line in, the runtime exec'd out.
#include <cstdio>
#include <string>
#include <vector>

#include "argv.h"
#include "runc_log.h"
#include "runtime.h"
#include "verbs.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  using namespace specshim::shim;
  if (args.size() > 1) {
    if (args[1] == "dry-run") return dry_run_main(args);
    if (args[1] == "doctor") return doctor_main(args);
  }
  RuncArgs parsed = parse_runc_args(args);
  if (parsed.modifies()) return create_main(parsed, args);
  return passthrough_main(parsed, args);
}
