// SPDX-License-Identifier: Apache-2.0
// A `specshim diagnose --format json` run and questions about its report,
// for the integration tests of diagnose (test/integration/diagnose*_test.cpp).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "container.h"
#include "running.h"
#include "specshim/base/spec.h"

namespace specshim::test {

// Diagnosis is one run and its parsed report.
struct Diagnosis {
  ProcessResult r;
  Json report;
};

// diagnose runs `specshim diagnose --root R --config C --format json ARGS...`
// (ARGS ending in the container id or --pod; the container's id when
// empty), which must print a report that keeps its contract: its keys,
// every check's layer and status, a hint on every failing check, the overall
// status and exit code following from the checks.
Diagnosis diagnose(const Specshim& specshim, std::vector<std::string> args = {});

// checks are the report's checks in layer (and, when not empty, about subject).
std::vector<Json> checks(const Json& report, const std::string& layer, const std::string& subject = "");
// failing_layers are the layers with at least one failing check.
std::set<std::string> failing_layers(const Json& report);
// failing_subjects are the subjects of layer's failing checks.
std::set<std::string> failing_subjects(const Json& report, const std::string& layer);
// messages are the messages of layer's checks about subject with status.
std::vector<std::string> messages(const Json& report, const std::string& layer, const std::string& subject,
                                  const std::string& status);
std::vector<std::string> failing_messages(const Json& report, const std::string& layer, const std::string& subject);
// statuses are the statuses of layer's checks (about subject, when not empty).
std::set<std::string> statuses(const Json& report, const std::string& layer, const std::string& subject = "");

bool any_contains(const std::vector<std::string>& texts, const std::string& needle);

}  // namespace specshim::test
