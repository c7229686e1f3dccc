// SPDX-License-Identifier: Apache-2.0
// --handler NAME on config versions 3 and 4 (containerd 2.x): the drop-in
// sets the handler's BinaryName and nothing else (containerd 2.x merges it
// over the root's handler key by key); the root keeps its bytes but for its
// imports line.
#include "containerd/install.h"

namespace specshim::shim::containerd {

void plan_handler_v3(Run& run, Plan& plan, const std::string& cfg) {
  std::string shown = run.strip_root(cfg);
  std::string dropin = run.host(kDropinRel);
  const std::string& handler = run.opt.handler;
  plan.prev_edit = state_get(run, "handler_edit");
  bool exists = false;
  if (plan.prev_edit.empty() && is_file(dropin) &&
      read_file(dropin).value_or("").find("containerd.runtimes.specshim]") != std::string::npos)
    throw Error(std::string(kDropinRel) +
                " registers the handler \"specshim\", which this install did not write; run install-on-host.sh "
                "--uninstall first");
  if (is_file(cfg)) {
    auto s = scan_handler(run, plan, read_file(cfg).value_or(""), shown);
    check_type(run, s.type, shown);
    exists = s.exists;
    std::string default_runtime = s.default_runtime;
    if (s.bin_line) {
      auto old = cc::toml_string(s.bin);
      if (!old)
        throw Error(shown + " line " + std::to_string(s.bin_line) + ": cannot read BinaryName = " + s.bin +
                    " (install-on-host.sh reads a one-line string without escapes)");
      plan.old_binary = *old;
    }
    auto imported = check_imports(run, plan, cfg, plan.version);
    if (imported.defines) exists = true;
    if (!imported.bin.empty()) plan.old_binary = imported.bin;
    if (!imported.default_runtime.empty()) default_runtime = imported.default_runtime;
    if (!imported.type.empty()) check_type(run, imported.type, shown + " (with its imports)");
    note_default(run, default_runtime);
  }
  if (plan.old_binary == run.opt.binary_path && plan.prev_edit != "dropin") {
    plan.edit = "none";
    plan.old_binary = "";
    return;
  }
  if (plan.old_binary == run.opt.binary_path) plan.old_binary = "";
  plan.edit = "dropin";
  if (!exists) {
    if (handler != "runc")
      throw Error(shown + " defines no handler " + q(handler) + " ([" + plan.paths.table +
                  "]): --handler names an existing handler (or runc, containerd's built-in one); leave --handler out "
                  "to add the new handler \"specshim\"");
    plan.block_handler = true;
  }
}

void apply_handler_v3(Run& run, Plan& plan, const std::string& cfg, Install& st) {
  const std::string& handler = run.opt.handler;
  if (plan.edit == "none") {
    run.log("the handler " + q(handler) + " in " + run.strip_root(cfg) + " runs " + run.opt.binary_path +
            " already (not set by install-on-host.sh); left as it is");
    return;
  }
  std::string r = "# specshim as the BinaryName of containerd's existing runtime handler `" + handler +
                  "`,\n# written by install-on-host.sh --handler " + handler +
                  "; --uninstall removes this file\n# and its entry in the imports of " + run.opt.containerd_config +
                  ".\n"
                  "# containerd 2.x merges imported files key by key: every other setting of the\n"
                  "# handler stays as the root config (and the files it imports before this one)\n"
                  "# has it.\n"
                  "version = " +
                  plan.version + "\n\n";
  if (plan.block_handler)
    r += "# The root config relies on containerd's built-in runc handler: state its runtime_type.\n[" +
         plan.paths.table + "]\n  runtime_type = \"io.containerd.runc.v2\"\n\n";
  r += "[" + plan.paths.table + ".options]\n  BinaryName = \"" + run.opt.binary_path + "\"\n";
  install_dropin(run, cfg, r, st);
  if (plan.prev_edit.empty() && !run.dry) log_takeover(run, plan, kDropinRel);
}

void log_takeover(const Run& run, const Plan& plan, const std::string& where) {
  const std::string& handler = run.opt.handler;
  const std::string& bin = run.opt.binary_path;
  if (plan.old_binary.empty()) {
    run.log("the handler " + q(handler) + " runs " + bin + " (" + where +
            "); it had no BinaryName of its own (containerd ran runc)");
  } else if (!plan.chain_path.empty()) {
    run.log("the handler " + q(handler) + ": BinaryName \"" + plan.old_binary + "\" replaced by " + bin + " (" + where +
            "), which runs " + plan.chain_path + " in place of runc (--chain)");
  } else {
    run.log("the handler " + q(handler) + ": BinaryName \"" + plan.old_binary + "\" replaced by " + bin + " (" + where +
            "); \"" + plan.old_binary + "\" no longer runs (specshim runs runc; --chain would keep it after specshim)");
  }
}

}  // namespace specshim::shim::containerd
