// SPDX-License-Identifier: Apache-2.0
// containerd's config as node reads it (specshim/node/containerd_config.h):
// the line scanner, a file's top level, names per version.
#include "specshim/node/containerd_config.h"

#include <catch2/catch.hpp>

using namespace specshim::node::containerd_config;

TEST_CASE("containerd config scanner: tables, keys and values, canonical") {
  auto r = scan(
      "version = 2\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.'runc']\n"
      "  runtime_type = \"io.containerd.runc.v2\"   # the shim\n"
      "  \"options\" . BinaryName = 'x'\n"
      "[[a.b]]\n");
  REQUIRE(r.size() == 5);
  CHECK(r[0].line == 1);
  CHECK(r[0].kind == Kind::kv);
  CHECK(r[0].table.empty());
  CHECK(r[0].key == "\"version\"");
  CHECK(r[0].value == "2");
  CHECK(r[1].kind == Kind::table);
  CHECK(r[1].table == "\"plugins\".\"io.containerd.grpc.v1.cri\".\"containerd\".\"runtimes\".\"runc\"");
  CHECK(r[2].key == "\"runtime_type\"");
  CHECK(r[2].value == "\"io.containerd.runc.v2\"");
  CHECK(r[2].table == r[1].table);
  CHECK(r[3].key == "\"options\".\"BinaryName\"");
  CHECK(r[3].segments == 2);
  CHECK(r[3].value == "'x'");
  CHECK(r[4].kind == Kind::array);
  CHECK(r[4].table == "\"a\".\"b\"");
}

TEST_CASE("containerd config scanner: a # inside strings is no comment") {
  auto r = scan("a = \"x # y\" # z\nb = 'p#q'\nc = \"esc \\\" # still\"  \n");
  REQUIRE(r.size() == 3);
  CHECK(r[0].value == "\"x # y\"");
  CHECK(r[1].value == "'p#q'");
  CHECK(r[2].value == "\"esc \\\" # still\"");
}

TEST_CASE("containerd config scanner: multi-line strings and arrays give no records inside") {
  auto r = scan(
      "a = \"\"\"\n[not.a.table]\nx = 1\n\"\"\"\n"
      "b = '''one\n[[no]]\n'''\n"
      "c = [\n  \"d\",\n  [\"e\"],\n]\n"
      "[t]\n");
  REQUIRE(r.size() == 4);
  CHECK(r[0].key == "\"a\"");
  CHECK(r[0].value == "\"\"\"");
  CHECK(r[1].key == "\"b\"");
  CHECK(r[1].line == 5);
  CHECK(r[2].key == "\"c\"");
  CHECK(r[2].value == "[");
  CHECK(r[3].kind == Kind::table);
  CHECK(r[3].line == 12);
}

TEST_CASE("containerd config scanner: bad lines, CRLF and a missing final newline") {
  auto r = scan("[a.b\r\nkey\r\n[t] x\r\n= 1\r\n[ok]\r\nk = 'v'");
  REQUIRE(r.size() == 6);
  CHECK(r[0].kind == Kind::bad);
  CHECK(r[1].kind == Kind::bad);
  CHECK(r[2].kind == Kind::bad);
  CHECK(r[3].kind == Kind::bad);
  CHECK(r[4].kind == Kind::table);
  CHECK(r[4].table == "\"ok\"");
  CHECK(r[5].value == "'v'");
  CHECK(r[5].line == 6);
  CHECK(lines("a\nb").size() == 2);
  CHECK(lines("a\nb\n").size() == 2);
  CHECK(lines("").empty());
}

TEST_CASE("containerd config: strings, paths above and under") {
  CHECK(toml_string("\"a b\"") == "a b");
  CHECK(toml_string("'a\\b'") == "a\\b");
  CHECK_FALSE(toml_string("\"a\\\"b\""));
  CHECK_FALSE(toml_string("\""));
  CHECK_FALSE(toml_string("true"));
  CHECK(under("\"a\".\"b\"", "\"a\""));
  CHECK(under("\"a\"", "\"a\""));
  CHECK_FALSE(under("\"ab\"", "\"a\""));
  CHECK(above("", "\"a\""));
  CHECK(above("\"a\"", "\"a\".\"b\""));
  CHECK_FALSE(above("\"a\"", "\"a\""));
}

TEST_CASE("containerd config: version, imports and names per version") {
  CHECK(file_version("# c\nversion = 3 # x\n[plugins]\n") == "3");
  CHECK(file_version("[plugins]\nversion = 3\n").empty());
  CHECK(file_version("").empty());
  CHECK(imports_line("version = 2\n  imports = [\"a\"]\n") == "  imports = [\"a\"]");
  CHECK_FALSE(imports_line("[x]\nimports = []\n"));
  CHECK(import_entries("imports = [\"a\", 'b',\n  \"c\" # \"d\"\n]\n[x]\n") == std::vector<std::string>{"a", "b", "c"});
  CHECK(cri_plugin(1) == "cri");
  CHECK(cri_plugin(2) == "io.containerd.grpc.v1.cri");
  CHECK(cri_plugin(4) == "io.containerd.cri.v1.runtime");
  auto p = handler_paths(2, "runc");
  CHECK(p.options == "\"plugins\".\"io.containerd.grpc.v1.cri\".\"containerd\".\"runtimes\".\"runc\".\"options\"");
  CHECK(p.table == "plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc");
  CHECK(config_version_of_release("1.7.13") == 2);
  CHECK(config_version_of_release("2.2.0") == 3);
  CHECK(config_version_of_release("2.3.4") == 4);
  CHECK(config_version_of_release("2.10.0") == 4);
  CHECK_FALSE(config_version_of_release("3.0.0"));
  CHECK(dirname("/etc/containerd/config.toml") == "/etc/containerd");
  CHECK(dirname("/x") == "/");
  CHECK(dirname("x") == ".");
  CHECK(name_matches("*.toml", "specshim.toml"));
  CHECK_FALSE(name_matches("9*.toml", "specshim.toml"));
}
