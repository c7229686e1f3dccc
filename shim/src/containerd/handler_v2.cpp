// SPDX-License-Identifier: Apache-2.0
// --handler NAME on config version 2 (containerd 1.x): the handler's
// BinaryName line rewritten in place (or added under its options table, or
// a marked block adds the options table), the line it replaced recorded, and
// put back on uninstall when nobody changed it since.
#include "containerd/install.h"

namespace specshim::shim::containerd {

namespace {

std::string no_handler(const Run& run, const Plan& plan, const std::string& shown) {
  return shown + " defines no handler " + q(run.opt.handler) + " ([" + plan.paths.table +
         "]): --handler names an existing handler (or runc, containerd's built-in one); leave --handler out to add "
         "the new handler \"specshim\"";
}

std::string unreadable_binary(const std::string& shown, int line, const std::string& raw) {
  return shown + " line " + std::to_string(line) + ": cannot read BinaryName = " + raw +
         " (install-on-host.sh reads a one-line string without escapes)";
}

}  // namespace

void plan_handler_v2(Run& run, Plan& plan, const std::string& cfg) {
  std::string shown = run.strip_root(cfg);
  std::string prev = state_get(run, "handler_edit");
  const std::string& handler = run.opt.handler;
  if (!is_file(cfg)) {
    if (handler != "runc")
      throw Error("no " + shown + ": there is no handler " + q(handler) +
                  " (only containerd's built-in runc) to make specshim the BinaryName of");
    plan.edit = "block";
    plan.block_handler = true;
    return;
  }
  std::string text = read_file(cfg).value_or("");
  if (has_line(text, kBeginMark) && prev != "block")
    throw Error(shown +
                " has specshim's marked block (the handler \"specshim\"?), which this install did not write; run "
                "install-on-host.sh --uninstall first");
  auto s = scan_handler(run, plan, split_block(text).outside, shown);
  check_type(run, s.type, shown);
  note_default(run, s.default_runtime);
  if (prev == "replaced" || prev == "inserted") {
    std::string want = unb64(state_get(run, "handler_line_b64"));
    std::string line = s.bin_line ? line_at(text, s.bin_line) : "";
    if (line != want)
      throw Error(shown + ": the BinaryName of the handler " + q(handler) +
                  " is no longer the line install-on-host.sh wrote (" + q(want) +
                  "): it was changed since. Run install-on-host.sh --uninstall (it keeps the line as it is now), then "
                  "install again");
    plan.edit = prev;
    plan.edit_line = s.bin_line;
    plan.old_binary = state_get(run, "handler_old_binary");
    plan.old_line = unb64(state_get(run, "handler_old_line_b64"));
    plan.new_line =
        prev == "replaced" ? binary_line(run, plan, plan.old_line, false) : binary_line(run, plan, line, true);
    return;
  }
  if (prev == "block" && has_line(text, kBeginMark)) {
    if (s.options || s.bin_line)
      throw Error(shown + ": [" + plan.paths.table +
                  ".options] is now written outside specshim's marked block too; remove one of them, then run again");
    plan.edit = "block";
    plan.block_handler = !s.exists;
    return;
  }
  check_imports(run, plan, cfg, "2");
  if (s.bin_line) {
    auto old = cc::toml_string(s.bin);
    if (!old) throw Error(unreadable_binary(shown, s.bin_line, s.bin));
    if (*old == run.opt.binary_path) {
      plan.edit = "none";
      plan.old_binary = "";
      return;
    }
    plan.old_binary = *old;
    plan.edit = "replaced";
    plan.edit_line = s.bin_line;
    plan.old_line = line_at(text, s.bin_line);
    plan.new_line = binary_line(run, plan, plan.old_line, false);
  } else if (s.options) {
    plan.edit = "inserted";
    plan.edit_line = s.options;
    plan.new_line = binary_line(run, plan, line_at(text, s.options), true, "  ");
  } else if (s.exists) {
    plan.edit = "block";
  } else if (handler == "runc") {
    plan.edit = "block";
    plan.block_handler = true;
  } else {
    throw Error(no_handler(run, plan, shown));
  }
}

void apply_handler_v2(Run& run, Plan& plan, const std::string& cfg, Install& st) {
  std::string shown = run.strip_root(cfg);
  const std::string& handler = run.opt.handler;
  const std::string& bin = run.opt.binary_path;
  if (plan.edit == "none") {
    run.log("the handler " + q(handler) + " in " + shown + " runs " + bin +
            " already (not set by install-on-host.sh); left as it is");
  } else if (plan.edit == "replaced" || plan.edit == "inserted") {
    std::string text = read_file(cfg).value_or("");
    if (line_at(text, plan.edit_line) == plan.new_line) {
      run.log("the handler " + q(handler) + " in " + shown + " runs " + bin + " already");
      return;
    }
    backup(run, cfg);
    // The line an earlier install inserted is rewritten, not inserted again.
    bool again = state_get(run, "handler_edit") == "inserted";
    if (plan.edit == "inserted" && !again) {
      text = insert_after(text, plan.edit_line, plan.new_line);
    } else {
      text = replace_line(text, plan.edit_line, plan.new_line);
    }
    if (!run.dry) rewrite(cfg, text);
    run.changed = true;
    std::string where = shown + " line " + std::to_string(plan.edit_line);
    if (!plan.prev_edit.empty()) {
      run.change("the handler " + q(handler) + " runs " + bin + " now (" + where + ")");
    } else if (run.dry) {
      run.change("the handler " + q(handler) + " runs " + bin + " (" + where + ")");
    } else {
      log_takeover(run, plan, where);
    }
  } else if (plan.edit == "block") {
    std::string block = std::string(kBeginMark) + "\n# specshim as the BinaryName of the handler `" + handler +
                        "` (install-on-host.sh --handler " + handler + ").\n";
    if (plan.block_handler)
      block +=
          "# containerd 1.x forgets its built-in runc handler once the config names any\n"
          "# runtime: restate it (containerd's defaults).\n[" +
          plan.paths.table + "]\n  runtime_type = \"io.containerd.runc.v2\"\n";
    block += "[" + plan.paths.table + ".options]\n  BinaryName = \"" + bin + "\"\n" + kEndMark + "\n";
    bool before = run.changed;
    install_block(run, cfg, block, "BinaryName " + bin + " for the handler " + q(handler), st);
    if (run.changed != before && plan.prev_edit.empty() && !run.dry) log_takeover(run, plan, shown);
  }
}

void uninstall_handler_line(Run& run, const std::string& cfg) {
  std::string edit = state_get(run, "handler_edit");
  if (edit != "replaced" && edit != "inserted") return;
  if (!is_file(cfg)) return;
  std::string shown = run.strip_root(cfg);
  run.opt.handler = state_get(run, "handler");
  Plan plan;
  plan.paths = cc::handler_paths(2, run.opt.handler);
  std::string want = unb64(state_get(run, "handler_line_b64"));
  std::string text = read_file(cfg).value_or("");
  std::string line;
  int at = 0;
  try {
    auto s = scan_handler(run, plan, text, shown);
    at = s.bin_line;
    if (at) line = line_at(text, at);
  } catch (const Error&) {
  }
  std::string old = state_get(run, "handler_old_binary");
  if (line != want) {
    run.log("keeping the BinaryName of the handler " + q(run.opt.handler) + " in " + shown +
            ": it was changed since the install (before install-on-host.sh it was " +
            (old.empty() ? "not set" : "\"" + old + "\"") + ")");
    return;
  }
  backup(run, cfg);
  if (edit == "replaced") {
    rewrite(cfg, replace_line(text, at, unb64(state_get(run, "handler_old_line_b64"))));
    run.log("restored BinaryName \"" + old + "\" of the handler " + q(run.opt.handler) + " in " + shown);
  } else {
    rewrite(cfg, delete_line(text, at));
    run.log("removed specshim's BinaryName from the handler " + q(run.opt.handler) + " in " + shown);
  }
  run.changed = true;
}

}  // namespace specshim::shim::containerd
