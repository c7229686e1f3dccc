// SPDX-License-Identifier: Apache-2.0
// specshim dry-run --all over live runc containers of one --root (busybox,
// created by runc directly): what the config at hand would do at each one's
// next create, and nothing written.
#include <catch2/catch.hpp>
#include <map>

#include "container.h"
#include "running.h"
#include "specshim/base/spec.h"
#include "tempdir.h"

namespace fs = std::filesystem;
using namespace specshim::test;
using specshim::Json;

namespace {

// cri names the container `name` of pod ns/pod as containerd's CRI does.
std::function<void(BusyboxBundle&)> cri(const std::string& ns, const std::string& pod, const std::string& name,
                                        Json more = Json::object()) {
  return [=](BusyboxBundle& b) {
    Json a = {{"io.kubernetes.cri.container-type", "container"},
              {"io.kubernetes.cri.sandbox-namespace", ns},
              {"io.kubernetes.cri.sandbox-name", pod},
              {"io.kubernetes.cri.container-name", name}};
    a.update(more);
    b.spec()["annotations"] = a;
  };
}

// The config a rollout would bring: a patch for the ml namespace, and CDI
// from a directory that defines no device.
std::string rollout_config(const fs::path& cdi) {
  return "[runtime]\npath = \"" + std::string(kRunc) + "\"\n[cdi]\nspec-dirs = [\"" + cdi.string() +
         "\"]\n"
         "[[patches]]\nname = \"preload\"\n"
         "match = { namespaces = [\"ml\"], container-kind = \"container\" }\n"
         "ops = [{ op = \"add\", path = \"/process/env/-\", value = \"LD_PRELOAD=/opt/vendor/preload.so\" }]\n";
}

}  // namespace

TEST_CASE("dry-run --all: each live container's next create under the config at hand, nothing written") {
  TempDir tmp;
  fs::path root = tmp / "runc-root";
  fs::create_directories(tmp / "cdi");
  write_file(tmp / "specshim.toml", rollout_config(tmp / "cdi"));
  Running train(tmp / "a", cri("ml", "train", "main"), "it-dry-a", root);
  Running site(tmp / "b", cri("web", "site", "app"), "it-dry-b", root);
  Running bad(tmp / "c", cri("ml", "bad", "main", {{"cdi.k8s.io/accel", "example.com/accel=gone"}}), "it-dry-c", root);
  std::map<std::string, std::string> before;
  for (const Running* c : {&train, &site, &bad}) before[c->id()] = read_file(c->bundle().dir() / "config.json");

  auto dry = [&](std::vector<std::string> more) {
    std::vector<std::string> args = {
        SPECSHIM_BINARY, "dry-run", "--all", "--root", root.string(), "--config", (tmp / "specshim.toml").string()};
    args.insert(args.end(), more.begin(), more.end());
    return run_process(args);
  };

  auto json = dry({"--format", "json"});
  INFO(json.out << json.err);
  REQUIRE(json.exit_code == 1);  // a create would fail
  std::map<std::string, Json> rows;
  for (const auto& row : Json::parse(json.out)) rows[row["id"]] = row;
  REQUIRE(rows.size() == 3);

  const Json& a = rows.at(train.id());
  CHECK(a["result"] == "changes");
  CHECK(a["pod"] == "ml/train");
  CHECK(a["container"] == "main");
  CHECK(a["status"] == "running");
  CHECK(a["changed_by"] == Json::array({"patches"}));
  bool preload = false;
  for (const auto& op : a["patch"])
    preload |= op["op"] == "add" && op.value("value", Json()) == "LD_PRELOAD=/opt/vendor/preload.so";
  CHECK(preload);

  const Json& b = rows.at(site.id());
  CHECK(b["result"] == "unchanged");
  CHECK(b["patch"].empty());
  CHECK(b["error"].is_null());

  const Json& c = rows.at(bad.id());
  CHECK(c["result"] == "fails");
  CHECK(c["error"].get<std::string>().find("example.com/accel=gone") != std::string::npos);

  auto text = dry({});
  INFO(text.out);
  CHECK(text.exit_code == 1);
  CHECK(text.out.find(train.id()) != std::string::npos);
  CHECK(text.out.find("changes (patches): ") != std::string::npos);
  CHECK(text.out.find("FAILS: ") != std::string::npos);
  CHECK(text.out.find("3 live containers: 1 would change, 1 would fail, 1 unchanged") != std::string::npos);

  for (const Running* c : {&train, &site, &bad}) CHECK(read_file(c->bundle().dir() / "config.json") == before[c->id()]);
}

TEST_CASE("dry-run --all: an empty root lists nothing and exits 0, and a bad command line exits 2") {
  TempDir tmp;
  write_file(tmp / "specshim.toml", "[runtime]\npath = \"" + std::string(kRunc) + "\"\n");
  auto r = run_process({SPECSHIM_BINARY, "dry-run", "--all", "--root", (tmp / "none").string(), "--config",
                        (tmp / "specshim.toml").string()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("0 live containers") != std::string::npos);
  CHECK(run_process({SPECSHIM_BINARY, "dry-run", "--all", "--bundle", "/x"}).exit_code == 2);
  CHECK(run_process({SPECSHIM_BINARY, "dry-run", "--all", "--format", "diff"}).exit_code == 2);
  CHECK(run_process({SPECSHIM_BINARY, "dry-run", "--bundle", "/x", "--root", "/r"}).exit_code == 2);
}
