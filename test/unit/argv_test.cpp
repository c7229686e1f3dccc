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

TEST_CASE("argv: create after -- is still the subcommand") {
  auto r = parse_runc_args(A({"--log", "/l", "--", "create", "-b", "/b", "id"}));
  REQUIRE(r.modifies());
  REQUIRE(r.bundle == "/b");
}
