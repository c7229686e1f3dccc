// SPDX-License-Identifier: Apache-2.0
// The shim's verbs: runc passthrough, create/run, and specshim's own verbs.
#pragma once

#include <string>
#include <vector>

#include "argv.h"

namespace specshim::shim {

// passthrough_main execs the runtime with argv untouched (every subcommand
// but create/run). --version prints specshim's version first.
int passthrough_main(const RuncArgs& parsed, const std::vector<std::string>& argv);

// create_main modifies <bundle>/config.json and execs the runtime; on any
// failure it writes a runc-style error line to --log and exits 1 without
// running the runtime or touching config.json.
int create_main(const RuncArgs& parsed, const std::vector<std::string>& argv);

// dry_run_main: specshim dry-run --bundle DIR [--config FILE] [--format json|diff] [--allow-allocate]
int dry_run_main(const std::vector<std::string>& argv);

// doctor_main: specshim doctor [--config FILE] [--json]
int doctor_main(const std::vector<std::string>& argv);

}  // namespace specshim::shim
