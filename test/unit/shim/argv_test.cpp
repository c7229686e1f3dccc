// SPDX-License-Identifier: Apache-2.0
#include "argv.h"

#include <catch2/catch.hpp>

using specshim::shim::parse_runc_args;

namespace {
std::vector<std::string> A(std::initializer_list<const char*> a) {
  std::vector<std::string> v{"specshim"};
  v.insert(v.end(), a.begin(), a.end());
  return v;
}
}  // namespace

TEST_CASE("argv: containerd's create line") {
  auto r = parse_runc_args(A({"--root", "/run/containerd/runc/k8s.io", "--log", "/b/log.json", "--log-format", "json",
                              "create", "--bundle", "/b", "--pid-file", "/b/init.pid", "abc"}));
  REQUIRE(r.modifies());
  REQUIRE(r.subcommand == "create");
  REQUIRE(r.subcommand_index == 7);
  REQUIRE(r.log == "/b/log.json");
  REQUIRE(r.log_format == "json");
  REQUIRE(r.bundle == "/b");
  REQUIRE(r.container_id == "abc");
}

TEST_CASE("argv: every bundle spelling") {
  struct Case {
    std::vector<std::string> argv;
    std::optional<std::string> bundle;
  };
  auto c = GENERATE(values<Case>({
      {A({"create", "--bundle", "/x", "id"}), "/x"},
      {A({"create", "--bundle=/x", "id"}), "/x"},
      {A({"create", "-b", "/x", "id"}), "/x"},
      {A({"create", "-b=/x", "id"}), "/x"},
      {A({"create", "-bundle", "/x", "id"}), "/x"},
      {A({"create", "id", "--bundle", "/x"}), "/x"},  // urfave/cli reorders flags after the id
      {A({"create", "--console-socket", "/s", "id"}), std::nullopt},
      {A({"create", "--pid-file", "--bundle", "id"}), std::nullopt},  // "--bundle" is the pid file
      {A({"run", "-d", "-b", "/y", "id"}), "/y"},
      {A({"create", "--bundle", "/x", "--bundle", "/z", "id"}), "/z"},  // last one wins, as Go flag
  }));
  auto r = parse_runc_args(c.argv);
  REQUIRE(r.modifies());
  REQUIRE(r.bundle == c.bundle);
  REQUIRE(r.container_id == "id");
}

TEST_CASE("argv: things that are not a create") {
  auto argv = GENERATE(values<std::vector<std::string>>({
      A({"exec", "ctr", "/bin/echo", "create"}),
      A({"--log", "create", "state", "x"}),
      A({"delete", "create"}),
      A({"start", "create"}),
      A({"--root", "create", "kill", "c", "9"}),
      A({}),
      A({"--debug"}),
      A({"features"}),
      A({"unknown-verb", "create"}),
      A({"--nope", "create", "--bundle", "/b", "id"}),  // runc rejects the global flag
      A({"--log"}),                                     // runc rejects the missing value
      A({"--version", "create", "-b", "/b", "id"}),     // urfave prints the version
      A({"-h", "create"}),
      A({"create"}),              // no id: runc prints its usage error
      A({"create", "a", "b"}),    // two ids
      A({"create", "--bundle"}),  // value missing
      A({"--", "--log", "x"}),
  }));
  auto r = parse_runc_args(argv);
  REQUIRE_FALSE(r.modifies());
}

TEST_CASE("argv: global flag forms") {
  auto r = parse_runc_args(A({"-log=/l", "-log-format=json", "--debug", "--systemd-cgroup", "--rootless", "auto",
                              "--criu", "/c", "create", "id"}));
  REQUIRE(r.modifies());
  REQUIRE(r.log == "/l");
  REQUIRE(r.log_format == "json");
  REQUIRE(r.debug);
  REQUIRE_FALSE(r.bundle);  // runc's default: the current directory

  auto v = parse_runc_args(A({"-v"}));
  REQUIRE(v.version);
  auto d = parse_runc_args(A({"--debug=false", "state", "x"}));
  REQUIRE_FALSE(d.debug);
  REQUIRE(d.subcommand == "state");
}

TEST_CASE("argv: unknown create flags are recorded, not guessed") {
  auto r = parse_runc_args(A({"create", "--future-flag", "id"}));
  REQUIRE(r.modifies());
  REQUIRE(r.unknown_flags == std::vector<std::string>{"--future-flag"});
}

TEST_CASE("argv: runc 1.2's --pidfd-socket takes a value on create and run") {
  // go-runc 1.2.0 puts it after --console-socket; its value must not become the id.
  auto verb = GENERATE(as<std::string>{}, "create", "run");
  auto spelling =
      GENERATE(values<std::vector<std::string>>({{"--pidfd-socket", "/run/p.sock"}, {"--pidfd-socket=/run/p.sock"}}));
  std::vector<std::string> argv = A({"--root", "/r", "--log", "/b/log.json"});
  argv.insert(argv.end(), {verb, "--bundle", "/b", "--console-socket", "/c.sock"});
  argv.insert(argv.end(), spelling.begin(), spelling.end());
  argv.push_back("id");
  auto r = parse_runc_args(argv);
  REQUIRE(r.modifies());
  REQUIRE(r.unknown_flags.empty());
  REQUIRE(r.bundle == "/b");
  REQUIRE(r.container_id == "id");
}

TEST_CASE("argv: global flags after the verb (runc main's grammar) are known, and --log there is the log") {
  auto r = parse_runc_args(A({"create", "--root", "/run/containerd/runc/k8s.io", "--log", "/b/log.json",
                              "--log-format=json", "--systemd-cgroup", "--bundle", "/b", "id", "--debug"}));
  REQUIRE(r.modifies());
  REQUIRE(r.unknown_flags.empty());
  REQUIRE(r.bundle == "/b");
  REQUIRE(r.container_id == "id");  // --root's value is not an id
  REQUIRE(r.log == "/b/log.json");
  REQUIRE(r.log_format == "json");
  REQUIRE(r.debug);
  auto s = parse_runc_args(A({"restore", "-no-subreaper", "--root=/r", "--bundle", "/b", "id"}));
  REQUIRE(s.unknown_flags.empty());
  REQUIRE(s.container_id == "id");
  // help and version after the verb are the verb's, not runc's: still unknown here.
  auto h = parse_runc_args(A({"create", "--help", "id"}));
  REQUIRE(h.unknown_flags == std::vector<std::string>{"--help"});
  REQUIRE(parse_runc_args(A({"create", "--root"})).malformed);  // a value missing is runc's to refuse
}

TEST_CASE("argv: create after -- is still the subcommand") {
  auto r = parse_runc_args(A({"--log", "/l", "--", "create", "-b", "/b", "id"}));
  REQUIRE(r.modifies());
  REQUIRE(r.bundle == "/b");
}

TEST_CASE("argv: containerd's restore line (go-runc) goes through the chain") {
  // go-runc RestoreOpts.args: CheckpointOpts first, then --detach, --pid-file,
  // --console-socket, --no-pivot, the single-dash -no-subreaper, and
  // Restore() appends --bundle after all of them, then the id.
  auto r = parse_runc_args(A({"--root",
                              "/run/containerd/runc/k8s.io",
                              "--log",
                              "/b/log.json",
                              "--log-format",
                              "json",
                              "--systemd-cgroup",
                              "restore",
                              "--image-path",
                              "/var/lib/containerd/cp/img",
                              "--work-path",
                              "/var/lib/containerd/cp/work",
                              "--parent-path",
                              "/var/lib/containerd/cp/p",
                              "--detach",
                              "--pid-file",
                              "/b/init.pid",
                              "--console-socket",
                              "/tmp/pty.sock",
                              "--no-pivot",
                              "-no-subreaper",
                              "--bundle",
                              "/b",
                              "abc"}));
  REQUIRE(r.modifies());
  REQUIRE(r.subcommand == "restore");
  REQUIRE(r.subcommand_index == 8);
  REQUIRE(r.log == "/b/log.json");
  REQUIRE(r.log_format == "json");
  REQUIRE(r.bundle == "/b");
  REQUIRE(r.container_id == "abc");
  REQUIRE(r.unknown_flags.empty());

  // The shortest line the shim sends: no parent, console or no-pivot.
  auto s = parse_runc_args(
      A({"--root", "/r", "--log", "/b/log.json", "--log-format", "json", "restore", "--image-path", "/i", "--work-path",
         "/w", "--detach", "--pid-file", "/b/init.pid", "-no-subreaper", "--bundle", "/b", "abc"}));
  REQUIRE(s.modifies());
  REQUIRE(s.bundle == "/b");
  REQUIRE(s.container_id == "abc");
  REQUIRE(s.unknown_flags.empty());
}

TEST_CASE("argv: every flag of runc's restore, in Go flag forms") {
  struct Case {
    std::vector<std::string> argv;
    std::optional<std::string> bundle;
  };
  auto c = GENERATE(values<Case>({
      // Every value flag takes the next token, whatever it looks like.
      {A({"restore",
          "--console-socket",
          "/s",
          "--image-path",
          "/i",
          "--work-path",
          "/w",
          "--manage-cgroups-mode",
          "soft",
          "--pid-file",
          "/p",
          "--empty-ns",
          "network",
          "--lsm-profile",
          "apparmor:p",
          "--lsm-mount-context",
          "system_u:object_r:container_file_t:s0",
          "--parent-path",
          "/pp",
          "-b",
          "/x",
          "id"}),
       "/x"},
      {A({"restore", "--image-path", "--bundle", "id"}), std::nullopt},  // "--bundle" is the image path
      {A({"restore", "--image-path=/i", "--manage-cgroups-mode=full", "--empty-ns=ipc", "--empty-ns", "net",
          "-bundle=/x", "id"}),
       "/x"},
      // Booleans take no value, and =true/=false only glued.
      {A({"restore", "--tcp-established", "--ext-unix-sk", "--shell-job", "--file-locks", "-d", "--no-subreaper",
          "--no-pivot", "--auto-dedup", "--lazy-pages", "--bundle", "/x", "id"}),
       "/x"},
      {A({"restore", "--detach=true", "-no-pivot=false", "--lazy-pages=1", "id", "-b", "/y"}), "/y"},  // reordered
      {A({"restore", "-detach", "id"}), std::nullopt},  // runc's default bundle: the cwd
  }));
  auto r = parse_runc_args(c.argv);
  REQUIRE(r.modifies());
  REQUIRE(r.unknown_flags.empty());
  REQUIRE(r.bundle == c.bundle);
  REQUIRE(r.container_id == "id");
}

TEST_CASE("argv: flags restore does not define are recorded, and bad restore lines are runc's to refuse") {
  // create's and run's flags that restore lacks, and checkpoint's --page-server.
  for (const char* flag : {"--keep", "--no-new-keyring", "--leave-running", "--pidfd-socket=/s", "--preserve-fds=3"}) {
    CAPTURE(flag);
    auto r = parse_runc_args(A({"restore", flag, "--bundle", "/b", "id"}));
    REQUIRE(r.modifies());
    REQUIRE(r.unknown_flags == std::vector<std::string>{flag});
  }
  auto argv = GENERATE(values<std::vector<std::string>>({
      A({"restore"}),                                                      // no id
      A({"restore", "a", "b"}),                                            // two ids
      A({"restore", "--image-path"}),                                      // value missing
      A({"restore", "--bundle", "/b"}),                                    // the bundle is not the id
      A({"checkpoint", "--image-path", "/i", "--work-path", "/w", "id"}),  // the running container, no config.json
      A({"--help", "restore", "--bundle", "/b", "id"}),
  }));
  REQUIRE_FALSE(parse_runc_args(argv).modifies());
}

TEST_CASE("argv: crun's flags find the bundle and the id as runc's do") {
  auto r = parse_runc_args(A({"--cgroup-manager", "systemd", "--log-level=debug", "create", "--no-subreaper",
                              "--preserve-fds", "2", "--bundle", "/b", "id"}));
  REQUIRE(r.modifies());
  REQUIRE(r.bundle == "/b");
  REQUIRE(r.container_id == "id");
  REQUIRE(r.unknown_flags.empty());
  REQUIRE(r.refused.empty());

  auto restore =
      parse_runc_args(A({"restore", "--tcp-close", "--network-lock", "--image-path", "/i", "-b", "/b", "id"}));
  REQUIRE(restore.modifies());
  REQUIRE(restore.bundle == "/b");
  REQUIRE(restore.container_id == "id");
  REQUIRE(restore.unknown_flags.empty());

  REQUIRE(parse_runc_args(A({"-V"})).version);
}

TEST_CASE("argv: crun's --config, another spec file than config.json, is refused naming it") {
  for (const char* flag : {"--config", "-f"}) {
    auto r = parse_runc_args(A({"create", flag, "other.json", "--bundle", "/b", "id"}));
    REQUIRE(r.container_id == "id");  // its value is not taken for the id
    REQUIRE(r.bundle == "/b");
    REQUIRE_THAT(r.refused, Catch::Contains("flag `" + std::string(flag) +
                                            "` of `create`: crun's --config names a spec "
                                            "file other than config.json"));
  }
}
