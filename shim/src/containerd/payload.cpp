// SPDX-License-Identifier: Apache-2.0
// The package's files on the node: the binary, the kubelet helper beside it,
// specshim's config (when absent, or the site's with --config), the checks
// before any change (architecture, a config that loads), and their removal.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "containerd/install.h"
#include "specshim/base/command.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/config_file.h"

#ifndef SPECSHIM_VERSION
#define SPECSHIM_VERSION "0.0.0"
#endif

namespace specshim::shim::containerd {
namespace {

std::string helper_src(const Run& run) {
  return run.opt.source_root + "/usr/libexec/specshim/specshim-kubelet";
}
std::string binary_src(const Run& run) {
  return run.opt.source_root + "/usr/bin/specshim";
}

// install_executable: dst becomes a 0755 copy of src, replaced atomically,
// unless it already has src's bytes.
void install_executable(Run& run, const std::string& src, const std::string& dst) {
  if (exists(dst) && read_file(dst) == read_file(src)) {
    run.log(run.strip_root(dst) + " is up to date");
    return;
  }
  auto bytes = read_file(src);
  if (!bytes) throw Error("read " + q(src) + ": not a regular file");
  if (!run.dry) replace_file(dst, *bytes, 0755);
  run.change("installed " + run.strip_root(dst));
}

bool package_binary(const Run& run) {
  std::string dst = run.host(run.opt.binary_path);
  return exists(dst) && cc::same_file(binary_src(run), dst);
}

// node_machine is the node's `uname -m` (the command on PATH, as the script ran it).
std::string node_machine() {
  auto r = run_command({"uname", "-m"}, std::chrono::seconds(kVersionSeconds));
  std::string m = r.out;
  while (!m.empty() && m.back() == '\n') m.pop_back();
  return m;
}

void check_architecture(const Run& run) {
  std::string node = node_machine();
  for (const auto& f : {binary_src(run), helper_src(run)}) {
    if (!is_file(f)) continue;
    std::string machine = elf_machine(f);
    if (machine != node)
      throw Error(q(f) + " is built for " + machine + ", but this node is " + node +
                  " (uname -m): install the .deb or image built for the node's architecture (docs/deploying.md, "
                  "\"arm64 nodes\"); nothing was changed");
  }
}

}  // namespace

std::string elf_machine(const std::string& file) {
  unsigned char h[20] = {};
  std::ifstream in(file, std::ios::binary);
  in.read(reinterpret_cast<char*>(h), sizeof h);
  if (in.gcount() < 20 || h[0] != 127 || h[1] != 'E' || h[2] != 'L' || h[3] != 'F') return "no ELF file";
  unsigned machine = h[5] == 1 ? h[18] + 256u * h[19] : 256u * h[18] + h[19];
  if (machine == 62) return "x86_64";
  if (machine == 183) return "aarch64";
  return "ELF machine " + std::to_string(machine);
}

void preflight(Run& run) {
  std::string bin = binary_src(run);
  if (!is_executable(bin)) throw Error(q(bin) + " is missing or not executable");
  check_architecture(run);
  if (!package_binary(run) && !is_executable(helper_src(run)))
    throw Error(q(helper_src(run)) + " is missing or not executable");
  if (!exists(run.host("/etc/specshim/config.toml")) && !is_file(run.opt.source_root + "/etc/specshim/config.toml"))
    throw Error(q(run.opt.source_root + "/etc/specshim/config.toml") + " missing from the source root");
}

void check_new_config(const Run& run, const std::string& chain_path) {
  std::string text, name;
  if (!run.opt.config_file.empty()) {
    name = run.opt.config_file;
    auto given = read_file(name);
    if (!given) throw Error("--config " + q(name) + ": cannot read it");
    text = *given;
  } else if (exists(run.host(kConfigRel))) {
    name = run.host(kConfigRel);
    text = read_file(name).value_or("");
  } else {
    name = run.opt.source_root + kConfigRel;
    text = render_config(run, chain_path);
  }
  try {
    read_config_file(config::Document::parse(text, name));
  } catch (const std::exception& e) {
    throw Error("refusing to install: this package's specshim (" SPECSHIM_VERSION ") cannot load the config: " +
                describe(e) + "; nothing on the node was changed");
  }
  run.log("the config " + (run.opt.config_file.empty() ? run.strip_root(name) : name) + " loads");
}

void install_binary(Run& run, Payload& p) {
  std::string src = binary_src(run);
  if (!is_executable(src)) throw Error(q(src) + " is missing or not executable");
  if (package_binary(run)) {
    run.log("binary " + run.opt.binary_path + " is the package's own; not copied");
    p.package_binary = true;
    p.binary_installed = state_get(run, "binary_installed");
    if (p.binary_installed.empty()) p.binary_installed = "0";
    return;
  }
  install_executable(run, src, run.host(run.opt.binary_path));
  p.binary_installed = "1";
}

void install_helper(Run& run, Payload& p) {
  std::string dst = run.host(cc::dirname(run.opt.binary_path) + "/specshim-kubelet");
  p.helper_installed = state_get(run, "helper_installed");
  if (p.helper_installed.empty()) p.helper_installed = "0";
  if (p.package_binary) return;
  if (!is_executable(helper_src(run))) throw Error(q(helper_src(run)) + " is missing or not executable");
  install_executable(run, helper_src(run), dst);
  p.helper_installed = "1";
}

namespace {

// install_site_config puts --config's bytes in place of the node's config,
// which is kept as a backup; check_new_config has read them already. The
// state is left as it was: the site's file is never uninstalled.
void install_site_config(Run& run, const std::string& dst) {
  std::string text = read_file(run.opt.config_file).value_or("");
  if (read_file(dst) == text) {
    run.log("/etc/specshim/config.toml already holds " + run.opt.config_file);
    return;
  }
  if (exists(dst) && !run.dry) backup(run, dst);
  if (!run.dry) {
    mkdirs(cc::dirname(dst));
    replace_file(dst, text, 0644);
  }
  run.change("installed " + run.opt.config_file + " as /etc/specshim/config.toml");
}

}  // namespace

void install_config(Run& run, Payload& p, const std::string& chain_path) {
  std::string src = run.opt.source_root + "/etc/specshim/config.toml";
  std::string dst = run.host("/etc/specshim/config.toml");
  p.config_installed = state_get(run, "config_installed");
  if (p.config_installed.empty()) p.config_installed = "0";
  p.config_chain_path = state_get(run, "config_chain_path");
  if (!run.opt.config_file.empty()) {
    install_site_config(run, dst);
    return;
  }
  if (exists(dst)) {
    run.log("keeping existing /etc/specshim/config.toml");
    return;
  }
  if (!is_file(src)) throw Error(q(src) + " missing from the source root");
  std::string rendered = render_config(run, chain_path);
  if (!run.dry) replace_file(dst, rendered, 0644);
  run.change("installed /etc/specshim/config.toml" +
             (chain_path.empty() ? "" : " with [runtime] path = \"" + chain_path + "\" (--chain)"));
  p.config_installed = "1";
  p.config_chain_path = chain_path;
}

void uninstall_payload(Run& run) {
  std::string binary_path = state_get(run, "binary_path");
  std::string bin = run.host(binary_path);
  if (state_get(run, "binary_installed") == "1" && exists(bin)) {
    std::remove(bin.c_str());
    run.log("removed " + binary_path);
  }
  std::string helper = run.host(cc::dirname(binary_path) + "/specshim-kubelet");
  if (state_get(run, "helper_installed") == "1" && exists(helper)) {
    std::remove(helper.c_str());
    run.log("removed " + run.strip_root(helper));
  }
  std::string conf = run.host("/etc/specshim/config.toml");
  if (state_get(run, "config_installed") == "1" && is_file(conf)) {
    std::string rendered;
    try {
      rendered = render_config(run, state_get(run, "config_chain_path"));
    } catch (const Error&) {
    }
    if (read_file(conf) == rendered) {
      std::remove(conf.c_str());
      ::rmdir(cc::dirname(conf).c_str());
      run.log("removed /etc/specshim/config.toml");
    } else {
      run.log("keeping /etc/specshim/config.toml: it was edited on the node");
    }
  }
}

}  // namespace specshim::shim::containerd
