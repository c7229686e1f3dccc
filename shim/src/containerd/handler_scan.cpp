// SPDX-License-Identifier: Apache-2.0
// --handler NAME: what a config file says of the handler (read with the line
// scanner), the checks every install makes of it, and the BinaryName line
// an install writes.
#include "containerd/install.h"

namespace specshim::shim::containerd {

HandlerScan scan_handler(const Run& run, const Plan& plan, const std::string& text, const std::string& shown) {
  HandlerScan s;
  const auto& p = plan.paths;
  const std::string& handler = run.opt.handler;
  for (const auto& r : cc::scan(text)) {
    std::string full, what;
    if (r.kind == cc::Kind::bad)
      throw Error(shown + " line " + std::to_string(r.line) + ": cannot read " + q(line_at(text, r.line)) +
                  " as TOML; fix it, or set BinaryName = \"" + run.opt.binary_path + "\" in [" + p.table +
                  ".options] by hand");
    if (r.kind == cc::Kind::table || r.kind == cc::Kind::array) {
      full = r.table;
      if (r.kind == cc::Kind::array && (cc::under(p.options, full) || cc::under(full, p.handler)))
        what = "an array of tables";
      if (full == p.options) s.options = r.line;
    } else {
      full = r.table.empty() ? r.key : r.table + "." + r.key;
      if (cc::under(p.options, full)) {
        what = "an inline table";
      } else if (cc::above(r.table, p.handler) && cc::under(full, p.handler)) {
        what = "dotted keys";
      } else if (r.table == p.handler && cc::under(full, p.options)) {
        what = "dotted keys";
      } else if (r.table == p.options && r.key == "\"BinaryName\"") {
        s.bin_line = r.line;
        s.bin = r.value;
      } else if (full == p.handler + ".\"runtime_type\"") {
        s.type = r.value;
      } else if (full == p.cri + ".\"containerd\".\"default_runtime_name\"") {
        s.default_runtime = r.value;
      }
    }
    if (!what.empty())
      throw Error(shown + " line " + std::to_string(r.line) + ": " + q(line_at(text, r.line)) + " writes the handler " +
                  q(handler) + " (or a table above its options) with " + what +
                  ", which install-on-host.sh does not edit. Write it as a [" + p.table + "] table and a [" + p.table +
                  ".options] table of plain keys, then run again");
    if (cc::under(full, p.handler)) s.exists = true;
    if (cc::under(full, p.cri)) s.cri = true;
  }
  return s;
}

void check_type(const Run& run, const std::string& type_raw, const std::string& where) {
  if (type_raw.empty()) return;
  auto type = cc::toml_string(type_raw);
  if (!type) throw Error(where + ": cannot read runtime_type " + type_raw + " of the handler " + q(run.opt.handler));
  if (*type != "io.containerd.runc.v2" && *type != "io.containerd.runc.v1")
    throw Error(where + ": the handler " + q(run.opt.handler) + " has runtime_type \"" + *type +
                "\", whose shim has no BinaryName; specshim runs under io.containerd.runc.v2 only");
}

void note_default(const Run& run, const std::string& raw) {
  std::string name = "runc";
  if (!raw.empty()) {
    auto s = cc::toml_string(raw);
    if (!s) return;
    name = *s;
  }
  if (name != run.opt.handler)
    run.log("note: default_runtime_name is \"" + name + "\": pods without a RuntimeClass run that, not \"" +
            run.opt.handler + "\" (a RuntimeClass with handler: " + run.opt.handler + " selects it)");
}

Imported check_imports(const Run& run, const Plan& plan, const std::string& cfg, const std::string& version) {
  Imported out;
  if (!is_file(cfg)) return out;
  std::string dropin = run.host(kDropinRel);
  bool after = false;
  const auto& p = plan.paths;
  for (const auto& f : import_order(run, cfg)) {
    if (f == dropin) {
      after = true;
      continue;
    }
    std::string shown = run.strip_root(f) + " (imported by " + run.opt.containerd_config + ")";
    auto s = scan_handler(run, plan, read_file(f).value_or(""), shown);
    if (version == "2" && s.cri)
      throw Error(shown +
                  " sets the CRI plugin (io.containerd.grpc.v1.cri): containerd 1.x replaces the root's whole CRI "
                  "table with that file's, so set BinaryName = \"" +
                  run.opt.binary_path + "\" in [" + p.table + ".options] there by hand");
    if (s.bin_line) {
      if (after)
        throw Error(shown + " line " + std::to_string(s.bin_line) + " sets the BinaryName of the handler " +
                    q(run.opt.handler) + ", and containerd loads it after " + kDropinRel +
                    ", so its value would win over specshim's. Move that setting into " + run.opt.containerd_config +
                    " (or remove it), then run again");
      auto bin = cc::toml_string(s.bin);
      if (!bin)
        throw Error(shown + " line " + std::to_string(s.bin_line) + ": cannot read BinaryName = " + s.bin +
                    " (install-on-host.sh reads a one-line string without escapes)");
      out.bin = *bin;
    }
    if (!s.default_runtime.empty()) out.default_runtime = s.default_runtime;
    if (!s.type.empty()) out.type = s.type;
    if (s.exists) out.defines = true;
  }
  return out;
}

std::string binary_line(const Run& run, const Plan& plan, const std::string& line, bool inserted,
                        const std::string& more) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\v' ||
                             line[i] == '\f' || line[i] == '\n'))
    ++i;
  std::string indent = line.substr(0, i);
  std::string cr = !line.empty() && line.back() == '\r' ? "\r" : "";
  if (!indent.empty() && indent.back() == '\r') indent.pop_back();
  indent += more;
  std::string comment =
      inserted ? "# added by install-on-host.sh --handler; --uninstall removes this line"
               : "# install-on-host.sh --handler: was \"" + plan.old_binary + "\"; --uninstall restores it";
  return indent + "BinaryName = \"" + run.opt.binary_path + "\"  " + comment + cr;
}

}  // namespace specshim::shim::containerd
