// SPDX-License-Identifier: Apache-2.0
// How bad a finding of doctor and diagnose is (JSON: "status").
#pragma once

#include <string_view>

namespace specshim::shim {

// Severity orders findings: a check is as bad as its worst finding, and any
// fail makes the verb exit 1.
enum class Severity { info, ok, warn, fail };

std::string_view severity_name(Severity s);  // "info", "ok", "warn", "fail"

}  // namespace specshim::shim
