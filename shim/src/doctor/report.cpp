// SPDX-License-Identifier: Apache-2.0
// The report: statuses, the text table and the JSON form of doctor's checks.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "doctor/doctor.h"

namespace specshim::shim {

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::ok:
      return "ok";
    case Severity::info:
      return "info";
    case Severity::warn:
      return "warn";
    case Severity::fail:
      return "fail";
  }
  return "?";
}

}  // namespace specshim::shim

namespace specshim::shim::doctor {

Severity Check::status() const {
  Severity worst = Severity::info;
  for (const auto& f : findings) worst = std::max(worst, f.status);
  return worst;
}

std::filesystem::path Host::path(std::string_view absolute) const {
  std::string_view rel = absolute;
  while (!rel.empty() && rel.front() == '/') rel.remove_prefix(1);
  return root / rel;
}

bool Loaded::on(std::string_view modifier) const {
  return std::find(modifiers_on.begin(), modifiers_on.end(), modifier) != modifiers_on.end();
}

int problems(const std::vector<Check>& checks) {
  int n = 0;
  for (const auto& c : checks)
    for (const auto& f : c.findings) n += f.status == Severity::fail;
  return n;
}

std::string count(std::size_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

std::string render_text(const std::vector<Check>& checks, bool verbose) {
  // Problems are upper case so they stand out in a long report.
  auto label = [](Severity s) -> std::string {
    return s == Severity::warn ? "WARN" : s == Severity::fail ? "FAIL" : std::string(severity_name(s));
  };
  std::string out;
  std::size_t warnings = 0;
  for (const auto& c : checks) {
    bool first = true;
    for (const auto& f : c.findings) {
      std::string name = first ? c.name : "";
      name.resize(std::max<std::size_t>(name.size() + 1, 14), ' ');
      std::string status = label(f.status);
      status.resize(6, ' ');
      out += name + status + f.text + "\n";
      if (verbose)
        for (const auto& d : f.details) out += std::string(22, ' ') + d + "\n";
      first = false;
      warnings += f.status == Severity::warn;
    }
  }
  auto fails = static_cast<std::size_t>(problems(checks));
  out += "\n" + count(fails, "problem") + ", " + count(warnings, "warning") + "\n";
  return out;
}

std::string render_json(const std::vector<Check>& checks) {
  nlohmann::ordered_json report = {{"problems", problems(checks)}, {"checks", nlohmann::ordered_json::array()}};
  for (const auto& c : checks) {
    nlohmann::ordered_json findings = nlohmann::ordered_json::array();
    for (const auto& f : c.findings) {
      nlohmann::ordered_json finding = {{"status", severity_name(f.status)}, {"text", f.text}};
      if (!f.details.empty()) finding["details"] = f.details;
      findings.push_back(std::move(finding));
    }
    report["checks"].push_back({{"name", c.name}, {"status", severity_name(c.status())}, {"findings", findings}});
  }
  return report.dump(2) + "\n";
}

}  // namespace specshim::shim::doctor
