// SPDX-License-Identifier: Apache-2.0
#include "running.h"

#include <catch2/catch.hpp>

namespace specshim::test {

std::vector<std::string> opens(const std::string& path) {
  return {"/bin/sh", "-c", "[ -c " + path + " ] && (: > " + path + ") 2>/dev/null && echo open-ok || echo open-failed"};
}

namespace fs = std::filesystem;

Running::Running(const fs::path& dir, const std::function<void(BusyboxBundle&)>& edit, const std::string& id_prefix,
                 const fs::path& root)
    : root_(root.empty() ? dir / "runc-root" : root), bundle_(dir / "bundle"), id_(unique_id(id_prefix)) {
  fs::create_directories(root_);
  bundle_.set_args({"/bin/sleep", "600"});
  // CAP_MKNOD lets the probes make their own 1:11 node: whether it opens is the cgroup rule alone.
  for (const char* set : {"bounding", "effective", "permitted"})
    bundle_.spec()["process"]["capabilities"][set].push_back("CAP_MKNOD");
  if (edit) edit(bundle_);
  bundle_.save();
  auto create = run_process({kRunc, "--root", root_.string(), "create", "--bundle", bundle_.dir().string(), id_}, {},
                            30000, {}, false);
  REQUIRE(create.exit_code == 0);
  auto start = run_process({kRunc, "--root", root_.string(), "start", id_});
  INFO(start.err);
  REQUIRE(start.exit_code == 0);
}

Running::~Running() {
  run_process({kRunc, "--root", root_.string(), "kill", id_, "KILL"});
  run_process({kRunc, "--root", root_.string(), "delete", "--force", id_});
}

ProcessResult Running::exec(const std::vector<std::string>& cmd) const {
  std::vector<std::string> argv = {kRunc, "--root", root_.string(), "exec", id_};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return run_process(argv);
}

std::string Running::sh(const std::string& script) const {
  return exec({"/bin/sh", "-c", script}).out;
}

pid_t Running::pid() const {
  auto r = run_process({kRunc, "--root", root_.string(), "state", id_});
  REQUIRE(r.exit_code == 0);
  return Json::parse(r.out)["pid"].get<pid_t>();
}

bool Running::rule_allows() const {
  return sh("rm -f /tmp/probe; mknod /tmp/probe c 1 11 && (: > /tmp/probe) 2>/dev/null && echo yes; rm -f "
            "/tmp/probe") == "yes\n";
}

ProcessResult Specshim::operator()(const std::string& verb, const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {SPECSHIM_BINARY, verb, "--root", c.root().string(), "--config", config.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

Json Specshim::attached() const {
  auto r = (*this)("attached", {"--format", "json", c.id()});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return Json::parse(r.out);
}

ProcessResult Specshim::with_id(const std::string& verb, std::vector<std::string> args) const {
  args.insert(args.begin(), c.id());
  return (*this)(verb, args);
}

}  // namespace specshim::test
