// SPDX-License-Identifier: Apache-2.0
// Running the real create core on a bundle directory, for golden and
// component tests.
#pragma once

#include <filesystem>
#include <string>

#include "specshim/modifiers/create.h"

namespace specshim::test {

// run_pipeline loads config_text as specshim's config and runs the chain on
// <bundle>/config.json exactly as `create` does, without writing anything.
create::Outcome run_pipeline(const std::filesystem::path& bundle, const std::string& config_text, bool dry_run = false);

}  // namespace specshim::test
