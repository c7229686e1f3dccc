// SPDX-License-Identifier: Apache-2.0
// specshim's entry point: runc's command line in, the runtime exec'd out.
#include <cstdio>
#include <ios>
#include <string>
#include <vector>

#include "argv.h"
#include "runc_log.h"
#include "runtime.h"
#include "verbs.h"

namespace {

// run_own_verb constructs the standard streams first: the own verbs' sources
// have no static initializer for them (no_static_iostream.h says why). The
// object lives until exit, which flushes them.
int run_own_verb(int (*run)(const std::vector<std::string>& argv), const std::vector<std::string>& args) {
  static std::ios_base::Init streams;
  return run(args);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  using namespace specshim::shim;
  if (args.size() > 1)
    if (const OwnVerb* verb = find_own_verb(args[1])) return run_own_verb(verb->run, args);
  if (args.size() == 3 && args[1] == "help")  // `specshim help dry-run`: that verb's --help
    if (const OwnVerb* verb = find_own_verb(args[2])) return run_own_verb(verb->run, {args[0], args[2], "--help"});
  if (!args.empty() && runs_as_legacy_hook(args[0])) return run_own_verb(legacy_hook_main, args);
  RuncArgs parsed = parse_runc_args(args);
  if (parsed.modifies()) return create_main(parsed, args);
  return passthrough_main(parsed, args);
}
