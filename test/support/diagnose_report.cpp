// SPDX-License-Identifier: Apache-2.0
#include "diagnose_report.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace specshim::test {
namespace {

const std::set<std::string> kLayers = {"allocation", "spec", "node", "cgroup", "companions", "identity", "hot-plug"};
const std::set<std::string> kStatuses = {"ok", "info", "warn", "fail"};

void check_shape(const Diagnosis& d) {
  const Json& j = d.report;
  REQUIRE(j.is_object());
  REQUIRE(j.contains("container"));
  REQUIRE(j.contains("pod"));
  REQUIRE(j.contains("status"));
  REQUIRE(j.contains("checks"));
  REQUIRE(j["checks"].is_array());
  bool any_fail = false, any_warn = false;
  for (const auto& c : j["checks"]) {
    INFO(c.dump());
    REQUIRE(c["layer"].is_string());
    REQUIRE(c["subject"].is_string());
    REQUIRE(c["status"].is_string());
    REQUIRE(c["message"].is_string());
    REQUIRE(c["hint"].is_string());
    CHECK(kLayers.count(c["layer"].get<std::string>()) == 1);
    CHECK(kStatuses.count(c["status"].get<std::string>()) == 1);
    if (c["status"] == "fail") {
      any_fail = true;
      CHECK_FALSE(c["hint"].get<std::string>().empty());
    }
    if (c["status"] == "warn") any_warn = true;
  }
  CHECK(j["status"] == (any_fail ? "fail" : any_warn ? "warn" : "ok"));
  CHECK(d.r.exit_code == (any_fail ? 1 : 0));
}

}  // namespace

Diagnosis diagnose(const Specshim& specshim, std::vector<std::string> args) {
  if (args.empty()) args = {specshim.c.id()};
  args.insert(args.begin(), {"--format", "json"});
  Diagnosis d{specshim("diagnose", args), {}};
  INFO("exit " << d.r.exit_code << "\nstdout:\n" << d.r.out << "\nstderr:\n" << d.r.err);
  REQUIRE((d.r.exit_code == 0 || d.r.exit_code == 1));
  REQUIRE_NOTHROW(d.report = Json::parse(d.r.out));
  check_shape(d);
  return d;
}

std::vector<Json> checks(const Json& report, const std::string& layer, const std::string& subject) {
  std::vector<Json> found;
  for (const auto& c : report["checks"])
    if (c["layer"] == layer && (subject.empty() || c["subject"] == subject)) found.push_back(c);
  return found;
}

std::set<std::string> failing_layers(const Json& report) {
  std::set<std::string> layers;
  for (const auto& c : report["checks"])
    if (c["status"] == "fail") layers.insert(c["layer"].get<std::string>());
  return layers;
}

std::set<std::string> failing_subjects(const Json& report, const std::string& layer) {
  std::set<std::string> subjects;
  for (const auto& c : checks(report, layer))
    if (c["status"] == "fail") subjects.insert(c["subject"].get<std::string>());
  return subjects;
}

std::vector<std::string> messages(const Json& report, const std::string& layer, const std::string& subject,
                                  const std::string& status) {
  std::vector<std::string> found;
  for (const auto& c : checks(report, layer, subject))
    if (c["status"] == status) found.push_back(c["message"].get<std::string>());
  return found;
}

std::vector<std::string> failing_messages(const Json& report, const std::string& layer, const std::string& subject) {
  return messages(report, layer, subject, "fail");
}

std::set<std::string> statuses(const Json& report, const std::string& layer, const std::string& subject) {
  std::set<std::string> found;
  for (const auto& c : checks(report, layer, subject)) found.insert(c["status"].get<std::string>());
  return found;
}

bool any_contains(const std::vector<std::string>& texts, const std::string& needle) {
  return std::any_of(texts.begin(), texts.end(),
                     [&](const std::string& t) { return t.find(needle) != std::string::npos; });
}

}  // namespace specshim::test
