// SPDX-License-Identifier: Apache-2.0
// --chain: the handler's old BinaryName becomes specshim's [runtime] path, in
// a fresh /etc/specshim/config.toml (an existing one is never overwritten,
// so it must say so already).
#include <sstream>

#include "containerd/install.h"

namespace specshim::shim::containerd {
namespace {

bool plain_path(const std::string& p) {
  for (char c : p)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '/' && c != '.' && c != '_' && c != '+' && c != '-')
      return false;
  return true;
}

}  // namespace

std::optional<std::string> config_runtime_path(const std::string& text) {
  for (const auto& r : cc::scan(text)) {
    if (r.kind != cc::Kind::kv) continue;
    if ((r.table == "\"runtime\"" && r.key == "\"path\"") || (r.table.empty() && r.key == "\"runtime\".\"path\""))
      return cc::toml_string(r.value);
  }
  return std::string();
}

void plan_chain(Run& run, Plan& plan) {
  plan.chain_path = "";
  if (!run.opt.chain) return;
  const std::string& old = plan.old_binary;
  const std::string& handler = run.opt.handler;
  if (old.empty()) {
    run.log("--chain: the handler " + q(handler) +
            " has no BinaryName of its own (containerd ran runc): nothing to chain; specshim runs runc");
    return;
  }
  if (old.substr(old.rfind('/') + 1).rfind("specshim", 0) == 0)
    throw Error("--chain: the handler's BinaryName \"" + old + "\" is a specshim already; run without --chain");
  if (old[0] == '/') {
    plan.chain_path = old;
  } else if (old.find('/') != std::string::npos) {
    throw Error("--chain: the handler's BinaryName \"" + old +
                "\" is a relative path; set [runtime] path to its absolute path in /etc/specshim/config.toml and run "
                "without --chain");
  } else {
    std::istringstream dirs(kNodePath);
    std::string d;
    while (dirs >> d)
      if (is_executable(run.host(d + "/" + old))) {
        plan.chain_path = d + "/" + old;
        break;
      }
    if (plan.chain_path.empty())
      throw Error("--chain: " + q(old) +
                  " (the handler's BinaryName) is in none of containerd's PATH directories on "
                  "the node (" +
                  std::string(kNodePath) +
                  "); set [runtime] path to its absolute path in /etc/specshim/config.toml and run without --chain");
  }
  if (!plain_path(plan.chain_path))
    throw Error("--chain: " + q(plan.chain_path) +
                " may hold only letters, digits and / . _ + -; set [runtime] path in /etc/specshim/config.toml by "
                "hand and run without --chain");
  // The config the node will have: --config's, else an existing one (never
  // overwritten), else the package's, which render_config gives the path.
  const bool site = !run.opt.config_file.empty();
  std::string conf = site ? run.opt.config_file : run.host(kConfigRel);
  if (!exists(conf)) return;
  auto cur = config_runtime_path(read_file(conf).value_or(""));
  std::string now = cur ? *cur : "(unreadable)";
  if (now != plan.chain_path)
    throw Error("--chain: " +
                (site ? "--config " + q(conf) + " is the config to install"
                      : std::string("/etc/specshim/config.toml exists (install-on-host.sh never overwrites it)")) +
                " and its [runtime] path is " + (now.empty() ? "not set" : "\"" + now + "\"") + "; set path = \"" +
                plan.chain_path + "\" in its [runtime] table (the runtime the handler " + q(handler) +
                " ran until now) and run again, or run without --chain to have specshim run runc in its place");
  run.log("--chain: /etc/specshim/config.toml runs " + plan.chain_path + " after specshim already");
}

std::string render_config(const Run& run, const std::string& chain_path) {
  std::string src = run.opt.source_root + "/etc/specshim/config.toml";
  std::string text = read_file(src).value_or("");
  if (chain_path.empty()) return text;
  if (!has_line(text, "[runtime]")) throw Error(q(src) + " has no [runtime] table to set path in");
  std::string out;
  bool done = false;
  for (const auto& line : cc::lines(text)) {
    out += line + "\n";
    if (line == "[runtime]" && !done) {
      out += "# install-on-host.sh --chain: what the containerd handler ran before specshim took its place.\n";
      out += "path = \"" + chain_path + "\"\n";
      done = true;
    }
  }
  return out;
}

}  // namespace specshim::shim::containerd
