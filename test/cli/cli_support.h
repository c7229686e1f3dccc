// SPDX-License-Identifier: Apache-2.0
// Cli, the fixture of the cli tests that run the real specshim binary against the recording runtime.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "container.h"
#include "tempdir.h"

namespace specshim::test {

// Fixture: a temp dir with a bundle, a record dir, and a config pointing
// [runtime] path at the recording runtime.
struct Cli {
  TempDir tmp;
  std::filesystem::path bundle = tmp / "bundle";
  std::filesystem::path record = tmp / "record";
  std::filesystem::path config = tmp / "specshim.toml";
  std::filesystem::path log = tmp / "bundle" / "log.json";
  std::string spec_text =
      "{\n  \"ociVersion\": \"1.0.2\",\n  \"process\": {\"user\": {\"uid\": 0, \"gid\": 0}, \"args\": [\"sh\"]},\n  "
      "\"x-unknown\": {\"n\": 1.50}\n}\n";

  Cli() {
    std::filesystem::create_directories(bundle);
    std::filesystem::create_directories(record);
    write_file(bundle / "config.json", spec_text);
    write_config("");
  }
  void write_config(const std::string& extra) {
    write_file(config, "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n" + extra);
  }
  std::map<std::string, std::string> env(std::map<std::string, std::string> more = {}) const {
    more["SPECSHIM_CONFIG"] = config.string();
    more["RECORD_DIR"] = record.string();
    return more;
  }
  ProcessResult shim(std::vector<std::string> args, std::map<std::string, std::string> more = {},
                     const std::filesystem::path& cwd = {}) const {
    args.insert(args.begin(), SPECSHIM_BINARY);
    return run_process(args, env(std::move(more)), 10000, cwd);
  }
  bool runtime_ran() const { return std::filesystem::exists(record / "argv"); }
  std::vector<std::string> recorded_argv() const {
    std::string raw = read_file(record / "argv");
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t i = 0; i < raw.size(); ++i)
      if (raw[i] == '\0') out.push_back(raw.substr(start, i - start)), start = i + 1;
    return out;
  }
  // last_error returns the msg of the last error line in --log ("" if none).
  std::string last_error() const {
    if (!std::filesystem::exists(log)) return "";
    std::string text = read_file(log), msg;
    std::size_t start = 0;
    while (start < text.size()) {
      auto end = text.find('\n', start);
      auto j = nlohmann::json::parse(text.substr(start, end - start));
      if (j.value("level", "") == "error") msg = j.value("msg", "");
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return msg;
  }
  std::vector<std::string> create_args(std::vector<std::string> tail) const {
    std::vector<std::string> a = {"--root", (tmp / "root").string(), "--log", log.string(), "--log-format", "json"};
    a.insert(a.end(), tail.begin(), tail.end());
    return a;
  }
};

}  // namespace specshim::test
