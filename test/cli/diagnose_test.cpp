// SPDX-License-Identifier: Apache-2.0
// specshim diagnose, the real binary: its command line and the containers
// it cannot inspect (exit 2, one line on stderr). Containers that run:
// test/integration/diagnose_test.cpp.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <sstream>

#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using Catch::Contains;
using Catch::StartsWith;

namespace {

// Diagnose: a config whose [runtime] is the real runc, and an empty runc --root.
struct Diagnose {
  TempDir tmp;
  fs::path config = tmp / "specshim.toml";
  fs::path root = tmp / "runc-root";
  fs::path record = tmp / "record";

  Diagnose() {
    fs::create_directories(root);
    fs::create_directories(record);
    write_file(config, "[runtime]\npath = \"/usr/sbin/runc\"\n");
  }
  ProcessResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), {SPECSHIM_BINARY, "diagnose"});
    return run_process(args, {{"SPECSHIM_CONFIG", config.string()}, {"RECORD_DIR", record.string()}}, 20000);
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// usage_error checks r exited 2 with nothing on stdout and one line on
// stderr, "specshim diagnose: ...", and returns that line.
std::string usage_error(const ProcessResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  auto lines = lines_of(r.err);
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], StartsWith("specshim diagnose: "));
  return lines[0];
}

// root: diagnose refuses to go on without root before it reads the config
// (CI runs as root).
bool as_root() {
  return ::geteuid() == 0;
}

}  // namespace

TEST_CASE("diagnose: neither a container id nor --pod is a usage error") {
  Diagnose d;
  CHECK_THAT(usage_error(d.run({})), Contains("give either CONTAINER-ID, --pod NAMESPACE/NAME or --all"));
  CHECK_THAT(usage_error(d.run({"--root", d.root.string(), "--format", "json"})),
             Contains("give either CONTAINER-ID, --pod NAMESPACE/NAME or --all"));
}

TEST_CASE("diagnose: both a container id and --pod is a usage error") {
  Diagnose d;
  CHECK_THAT(usage_error(d.run({"abc", "--pod", "default/web"})),
             Contains("give either CONTAINER-ID, --pod NAMESPACE/NAME or --all"));
  CHECK_THAT(usage_error(d.run({"--pod", "default/web", "--container", "main", "abc"})),
             Contains("give either CONTAINER-ID, --pod NAMESPACE/NAME or --all"));
}

TEST_CASE("diagnose: --all with a container id, --pod or --device is a usage error") {
  Diagnose d;
  for (auto args : std::vector<std::vector<std::string>>{
           {"--all", "abc"}, {"--all", "--pod", "default/web"}, {"--all", "--device", "/dev/x"}})
    CHECK_THAT(usage_error(d.run(args)), Contains("--all checks every container and every device"));
}

TEST_CASE("diagnose: --container with a container id and no --pod is a usage error") {
  Diagnose d;
  CHECK_THAT(usage_error(d.run({"abc", "--container", "main"})), Contains("--container needs --pod"));
}

TEST_CASE("diagnose: --container alone says that --container needs --pod") {
  Diagnose d;
  CHECK_THAT(usage_error(d.run({"--container", "main"})), Contains("--container needs --pod"));
}

TEST_CASE("diagnose: --format other than text or json is refused by the parser") {
  Diagnose d;
  auto r = d.run({"--format", "yaml", "abc"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  auto lines = lines_of(r.err);
  REQUIRE_FALSE(lines.empty());
  // CLI11's words (VerbCli), as for every verb: the option and the value, then a pointer to --help.
  CHECK_THAT(lines[0], Contains("--format") && Contains("yaml"));
  CHECK_THAT(r.err, !Contains("specshim diagnose:"));  // refused before anything is looked at
}

TEST_CASE("diagnose: --pod without one slash between two names asks for NAMESPACE/NAME") {
  if (!as_root()) return;
  Diagnose d;
  for (const char* pod : {"nonsense", "/web", "default/", "a/b/c", "/"}) {
    CAPTURE(pod);
    std::string line = usage_error(d.run({"--root", d.root.string(), "--pod", pod}));
    CHECK_THAT(line, Contains("NAMESPACE/NAME"));
    CHECK_THAT(line, Contains(std::string("`") + pod + "`"));
  }
}

TEST_CASE("diagnose: a pod with no container under the root is exit 2, naming the pod") {
  if (!as_root()) return;
  Diagnose d;
  std::string line = usage_error(d.run({"--root", d.root.string(), "--pod", "default/web"}));
  CHECK_THAT(line, Contains("`default/web`"));
  CHECK_THAT(line, Contains(d.root.string()));
}

TEST_CASE("diagnose: an unknown container id is exit 2, naming it") {
  if (!as_root()) return;
  Diagnose d;
  std::string line = usage_error(d.run({"--root", d.root.string(), "specshim-no-such-container"}));
  CHECK_THAT(line, Contains("`specshim-no-such-container`"));
  line = usage_error(d.run({"--root", d.root.string(), "--format", "json", "specshim-no-such-container"}));
  CHECK_THAT(line, Contains("`specshim-no-such-container`"));
}

TEST_CASE("diagnose: specshim --help lists diagnose, diagnose --help prints its options and exits 0") {
  Diagnose d;
  write_file(d.config, "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n");
  auto top = run_process({SPECSHIM_BINARY, "--help"},
                         {{"SPECSHIM_CONFIG", d.config.string()}, {"RECORD_DIR", d.record.string()}});
  INFO(top.out << top.err);
  CHECK(top.exit_code == 0);
  CHECK_THAT(top.out, Contains("diagnose "));

  auto r = d.run({"--help"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  for (const char* want : {"specshim diagnose", "CONTAINER-ID", "--root", "--config", "--format", "--pod",
                           "--container", "--device", "--cdi", "--sysfs", "NAMESPACE/NAME"})
    CHECK_THAT(r.out, Contains(want));
  fs::remove_all(d.record / "argv");
  CHECK(d.run({"-h"}).exit_code == 0);
  CHECK_FALSE(fs::exists(d.record / "argv"));  // the runtime never ran for diagnose's own help
}
