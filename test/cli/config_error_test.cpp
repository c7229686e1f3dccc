// SPDX-License-Identifier: Apache-2.0
// A config file that does not load, through the real binary: check-config
// says so before a rollout; at create, sandboxes still start and containers
// fail with the file's line, or pass untouched under on-config-error = "pass".
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_support.h"

namespace fs = std::filesystem;
using namespace specshim::test;

namespace {

// A config whose fourth line is a key no table knows.
const std::string kBrokenTail = "[chain]\nno-such-key = 1\n";

// kind_spec is a CRI spec of containerd's (or CRI-O's) sandbox or container.
std::string kind_spec(const std::string& key, const std::string& kind) {
  nlohmann::ordered_json j = {{"ociVersion", "1.0.2"},
                              {"process", {{"user", {{"uid", 0}, {"gid", 0}}}, {"args", {"/pause"}}}},
                              {"root", {{"path", "rootfs"}}},
                              {"annotations", {{key, kind}}}};
  return j.dump(2) + "\n";
}

// levels returns each line's level and msg, as runc's log holds them.
std::vector<std::pair<std::string, std::string>> log_lines(const fs::path& log) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!fs::exists(log)) return out;
  std::string text = read_file(log);
  for (std::size_t start = 0; start < text.size();) {
    auto end = text.find('\n', start);
    auto j = nlohmann::json::parse(text.substr(start, end - start));
    out.emplace_back(j.value("level", ""), j.value("msg", ""));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// containerd_create is the command line containerd's runc shim runs.
std::vector<std::string> containerd_create(const Cli& c, const std::string& id) {
  return {"--root",
          (c.tmp / "root").string(),
          "--log",
          c.log.string(),
          "--log-format",
          "json",
          "create",
          "--bundle",
          c.bundle.string(),
          "--pid-file",
          (c.bundle / "init.pid").string(),
          id};
}

}  // namespace

TEST_CASE("a broken config: a sandbox create runs the runtime on its untouched spec, a container's fails") {
  const auto [key, engine] = GENERATE(table<std::string, std::string>(
      {{"io.kubernetes.cri.container-type", "containerd"}, {"io.kubernetes.cri-o.ContainerType", "CRI-O"}}));
  INFO(engine);
  Cli c;
  c.write_config(kBrokenTail);

  std::string sandbox = kind_spec(key, "sandbox");
  write_file(c.bundle / "config.json", sandbox);
  auto r = c.shim(containerd_create(c, "pod-sandbox"));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.empty());
  REQUIRE(c.runtime_ran());
  REQUIRE(c.recorded_argv()[0] == RECORDING_RUNTIME);
  REQUIRE(read_file(c.bundle / "config.json") == sandbox);
  auto lines = log_lines(c.log);
  REQUIRE(lines.size() == 1);
  REQUIRE(lines[0].first == "warning");
  REQUIRE_THAT(lines[0].second, Catch::StartsWith("specshim: sandbox pod-sandbox started with its spec untouched"));
  REQUIRE_THAT(lines[0].second, Catch::Contains("line 4: unknown key `chain.no-such-key`"));

  fs::remove(c.record / "argv");
  fs::remove(c.log);
  std::string container = kind_spec(key, "container");
  write_file(c.bundle / "config.json", container);
  r = c.shim(containerd_create(c, "workload"));
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE(read_file(c.bundle / "config.json") == container);
  REQUIRE_THAT(c.last_error(), Catch::Contains("line 4: unknown key `chain.no-such-key`"));
}

TEST_CASE("a broken config fails a create outside CRI, and a sandbox whose engines disagree") {
  Cli c;
  c.write_config(kBrokenTail);
  auto r = c.shim(containerd_create(c, "plain"));  // Cli's spec has no annotations: ctr, docker
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());

  // CRI-O copies pod annotations: a containerd spec whose copied CRI-O kind
  // says otherwise is not taken for a sandbox.
  nlohmann::json j = nlohmann::json::parse(kind_spec("io.kubernetes.cri.container-type", "container"));
  j["annotations"]["io.kubernetes.cri-o.ContainerType"] = "sandbox";
  write_file(c.bundle / "config.json", j.dump());
  r = c.shim(containerd_create(c, "forged"));
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE_THAT(c.last_error(), Catch::Contains("unknown key `chain.no-such-key`"));
}

TEST_CASE("on-config-error = pass: a container of a broken config starts untouched, and the log says so") {
  Cli c;
  c.write_config("[policy]\non-config-error = \"pass\"\n" + kBrokenTail);
  std::string container = kind_spec("io.kubernetes.cri.container-type", "container");
  write_file(c.bundle / "config.json", container);
  auto r = c.shim(containerd_create(c, "workload"));
  REQUIRE(r.exit_code == 0);
  REQUIRE(c.runtime_ran());
  REQUIRE(read_file(c.bundle / "config.json") == container);
  auto lines = log_lines(c.log);
  REQUIRE(lines.size() == 1);
  REQUIRE(lines[0].first == "warning");
  REQUIRE_THAT(lines[0].second, Catch::StartsWith("specshim: container workload started WITHOUT specshim's chain"));
  REQUIRE_THAT(lines[0].second, Catch::Contains("line 6: unknown key `chain.no-such-key`"));

  SECTION("a file that is not TOML says nothing to trust: the create fails") {
    fs::remove(c.record / "argv");
    write_file(c.config, "[policy]\non-config-error = \"pass\"\n[runtime\n");
    r = c.shim(containerd_create(c, "workload"));
    REQUIRE(r.exit_code == 1);
    REQUIRE_FALSE(c.runtime_ran());
  }
  SECTION("any other value is an error of its own, and fails") {
    fs::remove(c.record / "argv");
    c.write_config("[policy]\non-config-error = \"yes\"\n");
    r = c.shim(containerd_create(c, "workload"));
    REQUIRE(r.exit_code == 1);
    REQUIRE_FALSE(c.runtime_ran());
    REQUIRE_THAT(c.last_error(),
                 Catch::Contains("line 4: `policy.on-config-error`: must be \"fail\" (the default) or \"pass\""));
  }
}

TEST_CASE("check-config: the shipped file loads, a broken one names file and line, a missing one is an error") {
  Cli c;
  auto ok = run_process({SPECSHIM_BINARY, "check-config", kShippedConfig});
  REQUIRE(ok.exit_code == 0);
  REQUIRE(ok.out ==
          std::string(kShippedConfig) + ": loads; modifiers on: passwd, cdi, devices-cgroup; on-config-error = fail\n");

  c.write_config(kBrokenTail);
  auto bad = run_process({SPECSHIM_BINARY, "check-config", c.config.string()});
  REQUIRE(bad.exit_code == 1);
  REQUIRE(bad.out.empty());
  REQUIRE(bad.err ==
          "specshim check-config: config `" + c.config.string() + "`: line 4: unknown key `chain.no-such-key`\n");

  // Without FILE: $SPECSHIM_CONFIG, as create reads it.
  auto env = c.shim({"check-config"});
  REQUIRE(env.exit_code == 1);
  REQUIRE_THAT(env.err, Catch::Contains("line 4: unknown key `chain.no-such-key`"));

  auto missing = run_process({SPECSHIM_BINARY, "check-config", (c.tmp / "nope.toml").string()});
  REQUIRE(missing.exit_code == 1);
  REQUIRE(missing.err == "specshim check-config: config `" + (c.tmp / "nope.toml").string() + "`: no such file\n");

  auto usage = run_process({SPECSHIM_BINARY, "check-config", "a", "b"});
  REQUIRE(usage.exit_code == 2);
}
