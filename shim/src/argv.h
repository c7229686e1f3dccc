// SPDX-License-Identifier: Apache-2.0
// Exact parsing of runc's command line, as containerd-shim-runc-v2 calls it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace specshim::shim {

// RuncArgs is what specshim needs to know about one runc invocation. The argv
// itself is never changed: it is handed to the runtime byte for byte.
struct RuncArgs {
  std::optional<std::string> log;    // --log
  std::string log_format = "text";   // --log-format
  bool debug = false;                // --debug
  bool version = false;              // --version / -v
  bool help = false;                 // --help / -h
  std::string subcommand;            // empty when there is none
  std::size_t subcommand_index = 0;  // index in argv, 0 when absent
  bool malformed = false;            // runc itself would reject the global flags

  // Only for create, run and restore:
  std::optional<std::string> bundle;  // --bundle / -b; runc's default is the cwd
  std::string container_id;
  std::vector<std::string> unknown_flags;  // flags no runtime kind's create/run/restore defines
  std::string refused;                     // a known flag specshim cannot complete a create with, and why

  // modifies: the verbs that start a container from the bundle's
  // config.json, which the chain completes first. restore is one: CRI
  // checkpoint/restore (containerd 2.x) runs `runc restore` on a freshly
  // written config.json, and the restored container needs the same mounts
  // and devices as the one that was checkpointed.
  bool modifies() const {
    return !malformed && !help && !version &&
           (subcommand == "create" || subcommand == "run" || subcommand == "restore");
  }
};

// parse_runc_args reads argv (argv[0] is the program) with runc 1.1–1.5's grammar
// and the flags of every runtime kind (specshim/base/runtime_kind.h: runc, crun):
// Go flag syntax for global flags (-f, --f, -f=v, --f=v, -f v; parsing stops at
// the first non-flag or "--"), then the subcommand, then for create, run and
// restore its flags in any position (urfave/cli reorders them) and one
// container id. Global flags may also follow those three verbs (runc main's
// persistent root flags); --log given there is where errors go.
RuncArgs parse_runc_args(const std::vector<std::string>& argv);

// absolute_bundle resolves a --bundle value (or the cwd when absent).
std::filesystem::path absolute_bundle(const std::optional<std::string>& bundle);

}  // namespace specshim::shim
