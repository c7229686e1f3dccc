// SPDX-License-Identifier: Apache-2.0
// The status of a finding of doctor and diagnose, in the order of severity.
#pragma once

#include <string_view>

namespace specshim::shim {

// Status orders findings: a check is as bad as its worst finding, and any
// fail makes the verb exit 1.
enum class Status { info, ok, warn, fail };

std::string_view status_name(Status s);  // "info", "ok", "warn", "fail"

}  // namespace specshim::shim
