// SPDX-License-Identifier: Apache-2.0
// Running `specshim doctor` (the real binary) against a fake host tree
// (--host-root), and matching its JSON report: for the cli and component
// doctor tests.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "container.h"
#include "tempdir.h"

namespace specshim::test {

// FakeHost is a host tree where every check can pass: cgroup v1 with the
// devices controller, the initial user namespace, a containerd config whose
// specshim runtime points (through a symlink) at the binary under test. The
// specshim config runs the recording runtime.
struct FakeHost {
  TempDir tmp;
  std::filesystem::path root = tmp / "host";
  std::filesystem::path config = tmp / "specshim.toml";

  FakeHost();
  static std::string containerd_config(const std::string& runtime, const std::string& binary);
  // write_config writes the specshim config: [runtime] and then extra.
  void write_config(const std::string& extra);
  ProcessResult doctor(std::vector<std::string> more = {}, std::map<std::string, std::string> env = {}) const;
  nlohmann::json report(std::map<std::string, std::string> env = {}) const;
};

// findings returns "status text" lines of one check of a JSON report.
std::vector<std::string> findings(const nlohmann::json& report, const std::string& check);
// finding returns the first finding of check whose text contains text (a
// null json when there is none).
nlohmann::json finding(const nlohmann::json& report, const std::string& check, const std::string& text);

// HasFinding matches a JSON report with a finding in check whose status is
// status and whose text contains text; a failure prints the whole report.
class HasFinding : public Catch::MatcherBase<nlohmann::json> {
 public:
  HasFinding(std::string check, std::string status, std::string text)
      : check_(std::move(check)), status_(std::move(status)), text_(std::move(text)) {}
  bool match(const nlohmann::json& report) const override;
  std::string describe() const override;

 private:
  std::string check_, status_, text_;
};

}  // namespace specshim::test
