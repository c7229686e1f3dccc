// SPDX-License-Identifier: Apache-2.0
// The shim's verbs: runc passthrough, create/run, and specshim's own verbs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "argv.h"

namespace specshim::shim {

// passthrough_main execs the runtime with argv untouched (every subcommand
// but create, run and restore). --version prints specshim's version first.
int passthrough_main(const RuncArgs& parsed, const std::vector<std::string>& argv);

// create_main modifies <bundle>/config.json and execs the runtime, for
// create, run and restore alike (a restored container gets what a created
// one gets); on any failure it writes a runc-style error line to --log and
// exits 1 without running the runtime or touching config.json.
int create_main(const RuncArgs& parsed, const std::vector<std::string>& argv);

// dry_run_main: specshim dry-run --bundle DIR [--config FILE] [--format json|diff] [--allow-allocate]
int dry_run_main(const std::vector<std::string>& argv);

// check_config_main: specshim check-config [FILE] (shim/src/check_config.cpp)
int check_config_main(const std::vector<std::string>& argv);

// doctor_main: specshim doctor [--config FILE] [--json]
int doctor_main(const std::vector<std::string>& argv);

// attach_main: specshim attach [--root DIR] [--config FILE] ID (--device HOST[:CONTAINER[:PERMS]] | --cdi NAME)...
// detach_main: specshim detach [--root DIR] [--config FILE] ID (--device CONTAINER-PATH | --cdi NAME)...
// attached_main: specshim attached [--root DIR] [--config FILE] [--format text|json] ID
// (shim/src/attach.cpp, docs/attach.md)
int attach_main(const std::vector<std::string>& argv);
int detach_main(const std::vector<std::string>& argv);
int attached_main(const std::vector<std::string>& argv);

// reconcile_main: specshim reconcile [--root DIR] [--config FILE] [--desired FILE] [--proc DIR]
// [--watch] [--interval SECONDS] (shim/src/reconcile.cpp, docs/reconcile.md)
int reconcile_main(const std::vector<std::string>& argv);

// diagnose_main: specshim diagnose [--root DIR] [--config FILE] [--format text|json] [--sysfs DIR]
// (CONTAINER-ID | --pod NS/NAME [--container NAME]) [--device PATH]... [--cdi NAME]...
// (shim/src/diagnose/, docs/diagnose.md)
int diagnose_main(const std::vector<std::string>& argv);

// nri_hook_main: specshim nri-hook --state-dir DIR [--config FILE], the
// createRuntime hook specshim-nri adds (shim/src/nri_hook.cpp, docs/nri.md).
int nri_hook_main(const std::vector<std::string>& argv);

// runs_as_legacy_hook tells whether specshim was exec'd under a vendor's
// hook name (argv[0]'s last component: nvidia-container-runtime-hook);
// legacy_hook_main is then the stand-in hook (shim/src/legacy_hook.cpp).
bool runs_as_legacy_hook(std::string_view argv0);
int legacy_hook_main(const std::vector<std::string>& argv);

// containerd_main: specshim containerd configure|unconfigure|check [options], the node
// installer's logic (shim/src/containerd/, docs/deploying.md), as the program
// specshim-containerd runs it. containerd_forward_main is specshim's verb
// `containerd`: it execs specshim-containerd with the rest of argv.
int containerd_main(const std::vector<std::string>& argv);
int containerd_forward_main(const std::vector<std::string>& argv);

// OwnVerb is one of specshim's own commands (argv[1] == name); run gets the
// whole argv.
struct OwnVerb {
  std::string_view name;
  std::string_view summary;
  int (*run)(const std::vector<std::string>& argv);
};
const std::vector<OwnVerb>& own_verbs();
const OwnVerb* find_own_verb(std::string_view name);

// usage is specshim's own help: what it is, its verbs, config and docs.
std::string usage();
// print_usage prints usage() to stdout when argv asks for the global help
// (--help, -h, or a bare `help`), before the runtime prints its own.
bool print_usage(const RuncArgs& parsed, const std::vector<std::string>& argv);

}  // namespace specshim::shim
