// SPDX-License-Identifier: Apache-2.0
// The order of the steps: every refusal before the first change on the
// node, the containerd config first (checked by the node's containerd before
// anything else changes), then the package's files, the state file, the
// restart. unconfigure takes back what the state file records.
#include <unistd.h>

#include <cstdio>

#include "containerd/install.h"

namespace specshim::shim::containerd {
namespace {

bool only(const std::string& s, const std::string& extra) {
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && extra.find(c) == std::string::npos) return false;
  return true;
}

std::string handler_role(const std::string& h) {
  return h == "specshim" ? "the new handler \"specshim\"" : "the BinaryName of the handler \"" + h + "\"";
}
std::string handler_flag(const std::string& h) {
  return h == "specshim" ? "without --handler" : "--handler " + h;
}

// check_handler_switch refuses an install as the other kind of handler than
// the state file records: switching is unconfigure, then configure.
void check_handler_switch(const Run& run) {
  if (!state_exists(run)) return;
  std::string prev = state_get(run, "handler");
  if (prev.empty()) prev = "specshim";
  const std::string& h = run.opt.handler;
  if (prev == h) return;
  throw Error("specshim is installed on this node as " + handler_role(prev) + " (" + kStateRel +
              "); this run asks for " + handler_role(h) +
              ". Switch in two steps: install-on-host.sh --uninstall, then install-on-host.sh " + handler_flag(h) +
              " (DaemonSet: SPECSHIM_MODE=uninstall, roll out, then SPECSHIM_MODE=install with SPECSHIM_HANDLER=" + h +
              ")");
}

}  // namespace

void validate(Options& opt) {
  const std::string& b = opt.binary_path;
  if (!only(b, "/._+-")) throw Error("--binary-path " + q(b) + " may hold only letters, digits and / . _ + -");
  if (b.empty() || b[0] != '/') throw Error("--binary-path " + q(b) + " must be absolute");
  if (opt.containerd_config.empty() || opt.containerd_config[0] != '/')
    throw Error("--containerd-config " + q(opt.containerd_config) + " must be absolute");
  if (opt.handler.empty() || !only(opt.handler, "_-"))
    throw Error("--handler " + q(opt.handler) + " must be a TOML bare key: only letters, digits, _ and -");
  const std::string& v = opt.config_version;
  if (!v.empty() && v != "2" && v != "3" && v != "4")
    throw Error("--config-version is 2 (containerd 1.6/1.7), 3 (2.0-2.2) or 4 (2.3 and later), not " + q(v));
  if (opt.chain && opt.handler == "specshim")
    throw Error(
        "--chain goes with --handler NAME (an existing handler whose BinaryName specshim takes over); the "
        "new handler \"specshim\" has no BinaryName to keep");
  if (!is_dir(opt.host_root))
    throw Error("host root " + q(opt.host_root) + " is not a directory (mount the node's / there)");
  if (!opt.host_root.empty() && opt.host_root.back() == '/') opt.host_root.pop_back();
}

void configure(Run& run) {
  std::string cfg = run.host(run.opt.containerd_config);
  Install st;
  st.version = config_version(run, cfg);
  const std::string& version = st.version;
  st.v2_newline = state_get(run, "v2_added_newline");
  st.v2_created = state_get(run, "v2_created_config");
  st.imports_edit = state_get(run, "imports_edit");
  st.dropin_dir_created = state_get(run, "dropin_dir_created");
  st.imported_by = state_get(run, "dropin_imported_by");
  if (version != "2" && version != "3" && version != "4")
    throw Error(run.strip_root(cfg) + " is containerd config version " + version +
                "; specshim supports 2 (containerd 1.6/1.7), 3 (2.0-2.2) and 4 (2.3 and later)");
  check_handler_switch(run);
  check_versions(run, cfg, version);
  const bool own_handler = run.opt.handler == "specshim";
  // With --handler, every refusal comes before the first change on the node.
  Plan plan;
  plan.version = version;
  if (!own_handler) {
    plan.paths = cc::handler_paths(std::stoi(version), run.opt.handler);
    if (version == "2") {
      plan_handler_v2(run, plan, cfg);
    } else {
      plan_handler_v3(run, plan, cfg);
    }
    plan_chain(run, plan);
  }
  preflight(run);
  check_new_config(run, plan.chain_path);
  // The containerd config first: the node's containerd checks it before
  // anything else of the node changes.
  Snapshot snap = snapshot_config(run);
  std::vector<std::string> handler_state;
  if (own_handler) {
    if (version == "2") {
      install_v2(run, cfg, st);
    } else {
      install_v3(run, cfg, st);
    }
  } else {
    if (version == "2") {
      apply_handler_v2(run, plan, cfg, st);
    } else {
      apply_handler_v3(run, plan, cfg, st);
    }
    handler_state = {"handler_edit=" + plan.edit, "handler_old_binary=" + plan.old_binary,
                     "handler_old_line_b64=" + b64(plan.old_line), "handler_line_b64=" + b64(plan.new_line),
                     "chain_path=" + plan.chain_path};
  }
  if (run.changed && !run.dry) check_config(run, snap);
  Payload p;
  install_binary(run, p);
  install_helper(run, p);
  install_config(run, p, plan.chain_path);
  auto or_zero = [](const std::string& s) { return s.empty() ? std::string("0") : s; };
  std::vector<std::string> state = {"config_version=" + version,
                                    "containerd_config=" + run.opt.containerd_config,
                                    "binary_path=" + run.opt.binary_path,
                                    "binary_installed=" + p.binary_installed,
                                    "helper_installed=" + p.helper_installed,
                                    "config_installed=" + p.config_installed,
                                    "config_chain_path=" + p.config_chain_path,
                                    "v2_added_newline=" + or_zero(st.v2_newline),
                                    "v2_created_config=" + or_zero(st.v2_created),
                                    "imports_edit=" + (st.imports_edit.empty() ? "none" : st.imports_edit),
                                    "dropin_imported_by=" + st.imported_by,
                                    "dropin_dir_created=" + or_zero(st.dropin_dir_created),
                                    "handler=" + run.opt.handler};
  state.insert(state.end(), handler_state.begin(), handler_state.end());
  state_write(run, state);
  if (run.dry) {
    if (run.changed) run.change("check the changed configuration with the node's containerd, then restart containerd");
    return;
  }
  if (run.changed) {
    restart_containerd(run);
  } else {
    run.log("containerd configuration unchanged; no restart");
  }
  if (own_handler) {
    run.log("done: RuntimeClass handler \"specshim\" runs " + run.opt.binary_path);
  } else {
    std::string runtime =
        config_runtime_path(read_file(run.host("/etc/specshim/config.toml")).value_or("")).value_or("");
    run.log("done: the handler \"" + run.opt.handler + "\" runs " + run.opt.binary_path +
            (runtime.empty() ? ""
                             : ", which runs " + runtime +
                                   " in place of runc ([runtime] path of "
                                   "/etc/specshim/config.toml)"));
  }
}

void unconfigure(Run& run) {
  std::string state = run.host(kStateRel);
  if (!is_file(state)) {
    run.log("nothing to uninstall: no " + std::string(kStateRel) + " on the node");
    return;
  }
  run.opt.containerd_config = state_get(run, "containerd_config");
  std::string cfg = run.host(run.opt.containerd_config);
  std::string version = state_get(run, "config_version");
  if (version == "2") {
    uninstall_v2(run, cfg);
    uninstall_handler_line(run, cfg);
  } else if (version == "3" || version == "4") {
    uninstall_v3(run, cfg, version);
  }
  if (run.changed) restart_containerd(run);
  uninstall_payload(run);
  std::remove(state.c_str());
  ::rmdir(cc::dirname(state).c_str());
  run.log("uninstalled");
}

}  // namespace specshim::shim::containerd
