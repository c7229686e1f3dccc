// SPDX-License-Identifier: Apache-2.0
// The real specshim binary against the recording fake runtime: what reaches
// the runtime (passthrough verbs, exit status, create's command lines and
// bundles, restore), errors, the runtime lookup, version and help.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_support.h"
#include "container.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;

TEST_CASE("passthrough verbs reach the runtime byte for byte, same pid, same env") {
  Cli c;
  std::vector<std::string> args = {"--root",      "/run/x", "--log",     c.log.string(),       "--log-format",
                                   "json",        "exec",   "--process", "/tmp/p.json",        "ctr",
                                   "/bin/echo",   "create", "",          "\xff\xfe raw bytes", "--bundle",
                                   "/nonexistent"};
  auto r = c.shim(args, {{"SOME_VAR", "kept"}});
  REQUIRE(r.exit_code == 0);
  auto got = c.recorded_argv();
  REQUIRE(got[0] == RECORDING_RUNTIME);
  REQUIRE(std::vector<std::string>(got.begin() + 1, got.end()) == args);
  REQUIRE(read_file(c.record / "pid") == std::to_string(r.pid));  // execve: same process
  REQUIRE_THAT(read_file(c.record / "env"), Catch::Contains(std::string("SOME_VAR=kept\0", 14)));
  REQUIRE(r.out.empty());
  REQUIRE(r.err.empty());
}

TEST_CASE("non-create command lines are never taken for a create") {
  auto args = GENERATE(values<std::vector<std::string>>({
      {"exec", "ctr", "/bin/echo", "create"},
      {"--log", "create", "state", "x"},
      {"delete", "create"},
      {"kill", "--all", "create", "9"},
      {"state", "create"},
      {"features"},
      {},
      {"no-such-verb", "--bundle", "."},
      {"checkpoint", "--image-path", "/i", "--work-path", "/w", "create"},
  }));
  Cli c;
  write_file(c.bundle / "config.json", "{ broken json");  // a create would fail on this
  auto r = c.shim(args, {}, c.bundle);
  REQUIRE(r.exit_code == 0);
  REQUIRE(c.runtime_ran());
  REQUIRE(c.last_error().empty());
}

TEST_CASE("exit status and signals pass through") {
  Cli c;
  auto code = c.shim({"state", "x"}, {{"FAKE_EXIT", "42"}});
  REQUIRE(code.exit_code == 42);
  auto sig = c.shim({"create", "--bundle", c.bundle.string(), "id"}, {{"FAKE_SIGNAL", "9"}});
  REQUIRE(sig.signaled);
  REQUIRE(sig.exit_code == 128 + 9);
}

TEST_CASE("create with nothing to change leaves config.json byte-identical and prints nothing") {
  Cli c;
  struct stat before {};
  ::stat((c.bundle / "config.json").c_str(), &before);
  auto args =
      c.create_args({"create", "--bundle", c.bundle.string(), "--pid-file", (c.bundle / "init.pid").string(), "id1"});
  auto r = c.shim(args);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.empty());
  REQUIRE(r.err.empty());
  REQUIRE(read_file(c.bundle / "config.json") == c.spec_text);
  struct stat after {};
  ::stat((c.bundle / "config.json").c_str(), &after);
  REQUIRE(after.st_ino == before.st_ino);  // not rewritten
  auto got = c.recorded_argv();
  REQUIRE(std::vector<std::string>(got.begin() + 1, got.end()) == args);
  REQUIRE_FALSE(fs::exists(c.log));  // nothing logged on success
}

TEST_CASE("every bundle spelling finds the bundle, and the default is the cwd") {
  Cli c;
  write_file(c.bundle / "config.json", "{ not json");
  auto form = GENERATE(as<std::string>{}, "--bundle", "--bundle=", "-b", "-b=", "-bundle", "cwd", "after-id");
  std::vector<std::string> args = {"--log", c.log.string(), "--log-format", "json", "create"};
  fs::path cwd;
  if (form == "cwd") {
    cwd = c.bundle;
  } else if (form == "after-id") {
    args.insert(args.end(), {"id", "--bundle", c.bundle.string()});
  } else if (form.back() == '=') {
    args.push_back(form + c.bundle.string());
  } else {
    args.insert(args.end(), {form, c.bundle.string()});
  }
  if (form != "after-id") args.push_back("id");
  auto r = c.shim(args, {}, cwd);
  INFO("form " << form);
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE_THAT(c.last_error(), Catch::StartsWith("specshim: parse `" + (c.bundle / "config.json").string() + "`: "));
}

TEST_CASE("bad config.json fails the create: error in --log, runtime not run, file untouched") {
  struct Case {
    std::string name, content, error;
  };
  auto k = GENERATE(values<Case>({
      {"malformed", "{\"a\": [1, 2}", "parse `"},
      {"not an object", "[1,2]", "spec is not a JSON object"},
      {"non-UTF-8", "{\"a\": \"\xc3\x28\"}", "line 1, column 8: invalid UTF-8 in a string, found bytes 0xC3 0x28"},
      {"empty", "", "parse `"},
      {"oversized", std::string(16 * 1024 * 1024 + 1, ' '), "the limit is 16777216"},
  }));
  Cli c;
  write_file(c.bundle / "config.json", k.content);
  auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  INFO(k.name);
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE_THAT(c.last_error(), Catch::Contains(k.error));
  REQUIRE_THAT(c.last_error(), Catch::StartsWith("specshim: "));
  REQUIRE(read_file(c.bundle / "config.json") == k.content);
  REQUIRE(r.out.empty());
}

TEST_CASE("missing config.json and missing bundle are clear errors") {
  Cli c;
  fs::remove(c.bundle / "config.json");
  c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE_THAT(c.last_error(), Catch::Contains("config.json`: No such file or directory"));
  REQUIRE_FALSE(c.runtime_ran());
}

TEST_CASE("log format text, and no --log at all") {
  Cli c;
  write_file(c.bundle / "config.json", "nope");
  c.shim({"--log", c.log.string(), "create", "--bundle", c.bundle.string(), "id"});
  REQUIRE_THAT(read_file(c.log), Catch::Matches("time=\"[0-9T:Z-]+\" level=error msg=\"specshim: parse .*\"\n"));
  auto r = c.shim({"create", "--bundle", c.bundle.string(), "id"});
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(r.err, Catch::Contains("level=error msg=\"specshim: parse"));
}

TEST_CASE("runtime lookup: configured path missing, PATH skips specshim itself") {
  Cli c;
  c.write_config("");
  write_file(c.config, "[runtime]\npath = \"/nonexistent/runc\"\n");
  auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(c.last_error(), Catch::Contains("[runtime] path `/nonexistent/runc`: No such file or directory"));
  // passthrough reports it too
  auto p = c.shim({"--log", c.log.string(), "--log-format", "json", "state", "x"});
  REQUIRE(p.exit_code == 1);

  // specshim installed as `runc` first on PATH, the real one later.
  fs::create_directories(c.tmp / "a");
  fs::create_directories(c.tmp / "b");
  fs::copy_file(SPECSHIM_BINARY, c.tmp / "a" / "runc");
  fs::copy_file(RECORDING_RUNTIME, c.tmp / "b" / "runc");
  write_file(c.config, "");
  std::string path = (c.tmp / "a").string() + ":" + (c.tmp / "b").string();
  auto q = run_process({(c.tmp / "a" / "runc").string(), "state", "x"}, c.env({{"PATH", path}}));
  REQUIRE(q.exit_code == 0);
  REQUIRE(c.recorded_argv()[0] == (c.tmp / "b" / "runc").string());

  // Only specshim on PATH: a clear error, no recursion.
  auto z = run_process({(c.tmp / "a" / "runc").string(), "--log", c.log.string(), "--log-format", "json", "state", "x"},
                       c.env({{"PATH", (c.tmp / "a").string()}}));
  REQUIRE(z.exit_code == 1);
  REQUIRE_THAT(c.last_error(), Catch::Contains("no `runc` on PATH other than specshim itself"));
}

TEST_CASE("with no runc on PATH, crun on PATH is the runtime (runtime kinds, in order)") {
  // specshim itself is not on this PATH: the test runs under qemu-user too,
  // where specshim cannot tell itself from another runc on PATH.
  Cli c;
  fs::create_directories(c.tmp / "b");
  fs::copy_file(RECORDING_RUNTIME, c.tmp / "b" / "crun");
  write_file(c.config, "");
  auto r = run_process({SPECSHIM_BINARY, "state", "x"}, c.env({{"PATH", (c.tmp / "b").string()}}));
  REQUIRE(r.exit_code == 0);
  REQUIRE(c.recorded_argv()[0] == (c.tmp / "b" / "crun").string());

  // runc, where there is one, comes first.
  fs::copy_file(RECORDING_RUNTIME, c.tmp / "b" / "runc");
  auto both = run_process({SPECSHIM_BINARY, "state", "x"}, c.env({{"PATH", (c.tmp / "b").string()}}));
  REQUIRE(both.exit_code == 0);
  REQUIRE(c.recorded_argv()[0] == (c.tmp / "b" / "runc").string());
}

TEST_CASE("a broken specshim config fails create but never blocks delete") {
  Cli c;
  write_file(c.config, "[runtime]\npath = \"" + std::string(RECORDING_RUNTIME) + "\"\n[chain]\nno-such-key = 1\n");
  auto del = c.shim({"--log", c.log.string(), "--log-format", "json", "delete", "--force", "id"});
  REQUIRE(del.exit_code == 0);
  REQUIRE(c.runtime_ran());
  fs::remove(c.record / "argv");
  auto r = c.shim(c.create_args({"create", "--bundle", c.bundle.string(), "id"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE_FALSE(c.runtime_ran());
  REQUIRE_THAT(c.last_error(), Catch::Contains("line 4: unknown key `chain.no-such-key`"));

  // Not even TOML: passthrough falls back to the default lookup (runc on PATH).
  write_file(c.config, "[runtime\n");
  fs::create_directories(c.tmp / "bin");
  fs::copy_file(RECORDING_RUNTIME, c.tmp / "bin" / "runc");
  auto d2 = run_process({SPECSHIM_BINARY, "delete", "id"}, c.env({{"PATH", (c.tmp / "bin").string()}}));
  REQUIRE(d2.exit_code == 0);
  REQUIRE(c.recorded_argv()[0] == (c.tmp / "bin" / "runc").string());
}

TEST_CASE("create lines of newer runtimes: --pidfd-socket and global flags after the verb run the chain") {
  Cli c;
  auto args = GENERATE(values<std::vector<std::string>>({
      {"create", "--pidfd-socket", "/run/pidfd.sock", "id"},
      {"run", "--detach", "--pidfd-socket=/run/pidfd.sock", "id"},
      {"create", "--root", "/run/x", "--systemd-cgroup", "id"},
  }));
  CAPTURE(args);
  auto line = c.create_args(args);
  auto r = c.shim(line, {}, c.bundle);
  REQUIRE(r.exit_code == 0);
  REQUIRE(c.last_error().empty());
  auto got = c.recorded_argv();
  REQUIRE(std::vector<std::string>(got.begin() + 1, got.end()) == line);
  // It went through the chain, not around it: a broken config.json now fails the create.
  write_file(c.bundle / "config.json", "{ broken json");
  fs::remove_all(c.record / "argv");
  REQUIRE(c.shim(line, {}, c.bundle).exit_code == 1);
  REQUIRE_THAT(c.last_error(), Catch::Contains("config.json"));
  REQUIRE_FALSE(c.runtime_ran());
}

TEST_CASE("unknown create flags are refused, not guessed") {
  Cli c;
  auto r = c.shim(c.create_args({"create", "--future-flag=x", "id"}));
  REQUIRE(r.exit_code == 1);
  REQUIRE_THAT(c.last_error(), Catch::Contains("flag `--future-flag=x` of `create` is unknown"));
  REQUIRE_FALSE(c.runtime_ran());
}

namespace {

// restore_bundle writes a bundle whose container runs as uid 10001, which its
// image's /etc/passwd lacks, and asks for a CDI device (a node in front of
// the host's /dev/null) by annotation, as a CRI checkpoint's config.json would.
void restore_bundle(const fs::path& bundle) {
  write_file(bundle / "rootfs/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
  write_file(bundle / "rootfs/etc/group", "root:x:0:\n");
  write_file(bundle / "config.json",
             R"({"ociVersion": "1.0.2", "root": {"path": "rootfs"},
                 "process": {"user": {"uid": 10001, "gid": 10001}, "args": ["sh"], "env": ["PATH=/bin"]},
                 "annotations": {"cdi.k8s.io/accel": "example.com/accel=0"},
                 "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]}}})");
}

}  // namespace

TEST_CASE("restore goes through the chain like create: passwd mount and CDI device, then runc with the original argv") {
  Cli c;
  fs::path cdi = c.tmp / "cdi";
  write_file(cdi / "accel.json", R"({"cdiVersion": "0.6.0", "kind": "example.com/accel",
      "devices": [{"name": "0", "containerEdits": {"deviceNodes": [{"path": "/dev/accel0", "hostPath": "/dev/null"}]}}]})");
  c.write_config("[cdi]\nspec-dirs = [\"" + cdi.string() + "\"]\ncache-dir = \"\"\n");
  fs::path created = c.tmp / "created";
  restore_bundle(c.bundle);
  restore_bundle(created);

  // containerd's shim (go-runc RestoreOpts): --bundle after the other flags, the single-dash -no-subreaper.
  auto args = c.create_args({"restore", "--image-path", (c.tmp / "image").string(), "--work-path",
                             (c.tmp / "work").string(), "--detach", "--pid-file", (c.bundle / "init.pid").string(),
                             "--no-pivot", "-no-subreaper", "--bundle", c.bundle.string(), "ctr-1"});
  auto r = c.shim(args);
  INFO(r.err << c.last_error());
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.empty());
  auto got = c.recorded_argv();
  REQUIRE(got[0] == RECORDING_RUNTIME);
  REQUIRE(std::vector<std::string>(got.begin() + 1, got.end()) == args);  // byte for byte
  REQUIRE(read_file(c.record / "pid") == std::to_string(r.pid));          // exec'd, not spawned

  auto spec = nlohmann::json::parse(read_file(c.bundle / "config.json"));
  bool passwd_mounted = false;
  for (const auto& m : spec["mounts"])
    if (m["destination"] == "/etc/passwd") passwd_mounted = m["source"] == (c.bundle / "specshim-passwd").string();
  REQUIRE(passwd_mounted);
  REQUIRE_THAT(read_file(c.bundle / "specshim-passwd"), Catch::Contains("user10001:x:10001:10001:"));
  REQUIRE(spec["linux"]["devices"][0]["path"] == "/dev/accel0");
  REQUIRE(spec["linux"]["devices"][0]["major"] == 1);
  REQUIRE(spec["linux"]["devices"][0]["minor"] == 3);

  // The same bundle created instead of restored comes out the same.
  auto create =
      c.create_args({"create", "--bundle", created.string(), "--pid-file", (created / "init.pid").string(), "ctr-2"});
  REQUIRE(c.shim(create).exit_code == 0);
  REQUIRE(replace_all(read_file(created / "config.json"), created.string(), c.bundle.string()) ==
          read_file(c.bundle / "config.json"));
}

TEST_CASE("a refused restore writes runc's JSON error line to --log and runs nothing, like create") {
  Cli c;
  SECTION("a device no spec defines") {
    restore_bundle(c.bundle);
    std::string before = read_file(c.bundle / "config.json");
    c.write_config("[cdi]\nspec-dirs = [\"" + (c.tmp / "no-cdi").string() + "\"]\n");
    auto r = c.shim(
        c.create_args({"restore", "--image-path", "/i", "--work-path", "/w", "--detach", "--pid-file",
                       (c.bundle / "init.pid").string(), "-no-subreaper", "--bundle", c.bundle.string(), "ctr-1"}));
    REQUIRE(r.exit_code == 1);
    REQUIRE(r.out.empty());
    REQUIRE_FALSE(c.runtime_ran());
    REQUIRE(read_file(c.bundle / "config.json") == before);
    REQUIRE_THAT(c.last_error(), Catch::StartsWith("specshim: cdi: unresolvable CDI devices example.com/accel=0"));
    // One line, runc's fields: level, msg, time.
    auto line = nlohmann::json::parse(read_file(c.log));
    REQUIRE(line["level"] == "error");
    REQUIRE(line.contains("time"));
  }
  SECTION("a flag runc's restore does not define") {
    auto r = c.shim(c.create_args({"restore", "--page-server=10.0.0.1:27", "--bundle", c.bundle.string(), "id"}));
    REQUIRE(r.exit_code == 1);
    REQUIRE_FALSE(c.runtime_ran());
    REQUIRE_THAT(c.last_error(),
                 Catch::Contains("flag `--page-server=10.0.0.1:27` of `restore` is unknown to specshim"));
  }
  SECTION("a broken config.json") {
    write_file(c.bundle / "config.json", "{ broken");
    auto r = c.shim(c.create_args({"restore", "--bundle", c.bundle.string(), "id"}));
    REQUIRE(r.exit_code == 1);
    REQUIRE_FALSE(c.runtime_ran());
    REQUIRE_THAT(c.last_error(), Catch::StartsWith("specshim: parse `" + (c.bundle / "config.json").string() + "`: "));
  }
}

TEST_CASE("version: prints specshim's version, then the runtime's") {
  Cli c;
  auto r = c.shim({"--version"});
  REQUIRE_THAT(r.out, Catch::StartsWith("specshim version "));
  REQUIRE(c.recorded_argv().back() == "--version");
}

TEST_CASE("help: --help, -h and help print specshim's usage, then the runtime's help") {
  Cli c;
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"}, {"-h"}, {"help"}, {"--debug", "--help"}}) {
    CAPTURE(args);
    auto r = c.shim(args);
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::StartsWith("specshim "));
    for (const char* want :
         {"dry-run ", "doctor ", "attach ", "detach ", "attached ", "/etc/specshim/config.toml", "SPECSHIM_CONFIG",
          "man specshim", "passwd, device-plugin, cpuset, env-devices, hotplug, cdi"})
      REQUIRE_THAT(r.out, Catch::Contains(want));
    REQUIRE(c.recorded_argv() == [&] {  // the runtime got the same argv, and prints its own help
      std::vector<std::string> want{RECORDING_RUNTIME};
      want.insert(want.end(), args.begin(), args.end());
      return want;
    }());
  }
}

TEST_CASE("help: a runc command's help and `help VERB` are not specshim's usage") {
  Cli c;
  auto create = c.shim({"create", "--help"});
  REQUIRE_THAT(create.out, !Catch::Contains("specshim's own commands"));
  REQUIRE(c.runtime_ran());
  auto topic = c.shim({"help", "create"});
  REQUIRE_THAT(topic.out, !Catch::Contains("specshim's own commands"));
  auto verb = c.shim({"help", "dry-run"});
  REQUIRE(verb.exit_code == 0);
  REQUIRE_THAT(verb.out, Catch::Contains("--bundle"));
}

TEST_CASE("help: attach, detach and attached each print their own --help, and refuse bad arguments") {
  Cli c;
  for (const char* verb : {"attach", "detach", "attached"}) {
    CAPTURE(verb);
    auto r = c.shim({verb, "--help"});
    REQUIRE(r.exit_code == 0);
    REQUIRE_THAT(r.out, Catch::Contains(std::string("specshim ") + verb));
    REQUIRE_THAT(r.out, Catch::Contains("--root"));
    REQUIRE_THAT(r.out, Catch::Contains("CONTAINER-ID"));
    auto bare = c.shim({verb});
    REQUIRE(bare.exit_code != 0);
    REQUIRE_THAT(bare.err, Catch::Contains("CONTAINER-ID is required"));
    REQUIRE_FALSE(c.runtime_ran());
  }
  REQUIRE_THAT(c.shim({"attach", "--help"}).out, Catch::Contains("HOST[:CONTAINER[:PERMS]]"));
  REQUIRE_THAT(c.shim({"attached", "--help"}).out, Catch::Contains("--format"));
}
