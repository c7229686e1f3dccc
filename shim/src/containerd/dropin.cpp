// SPDX-License-Identifier: Apache-2.0
// Config versions 3 and 4 (containerd 2.x): specshim's drop-in
// conf.d/specshim.toml, at the root config's version, and its entry in the
// root's top-level `imports` (unless a glob there covers it already).
#include <unistd.h>

#include <cstdio>
#include <functional>

#include "containerd/install.h"

namespace specshim::shim::containerd {
namespace {

bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// imports_open is the length of /^[[:space:]]*imports[[:space:]]*=[[:space:]]*\[/'s
// match without its `[`, if the line matches.
std::optional<std::size_t> imports_open(const std::string& line) {
  std::size_t i = 0;
  while (i < line.size() && blank(line[i])) ++i;
  if (line.compare(i, 7, "imports") != 0) return std::nullopt;
  i += 7;
  while (i < line.size() && blank(line[i])) ++i;
  if (i >= line.size() || line[i] != '=') return std::nullopt;
  ++i;
  while (i < line.size() && blank(line[i])) ++i;
  if (i >= line.size() || line[i] != '[') return std::nullopt;
  return i;
}

// edit_lines is sed over a file's lines: edit returns the new line (nullopt:
// not matched, kept; "\x7f" marks a deleted line); first_only stops after the
// first match. Line terminators and a missing final newline stay.
std::string edit_lines(const std::string& text, bool first_only,
                       const std::function<std::optional<std::string>(const std::string&)>& edit) {
  std::string out;
  bool done = false;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    std::size_t end = nl == std::string::npos ? text.size() : nl;
    std::string line = text.substr(start, end - start);
    std::string term = nl == std::string::npos ? "" : "\n";
    start = end + 1;
    if (!done) {
      if (auto changed = edit(line)) {
        done = first_only;
        if (*changed == "\x7f") continue;
        line = *changed;
      }
    }
    out += line + term;
  }
  return out;
}

std::string entry() {
  return "\"" + std::string(kDropinRel) + "\"";
}

std::string trimmed(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

void install_v3(Run& run, const std::string& cfg, Install& st) {
  std::string src = run.opt.source_root + "/usr/share/specshim/containerd/containerd-2.x.toml";
  std::string rendered = render_snippet(run, src, cfg);
  if (!has_line(rendered, "version = 3")) throw Error("snippet " + q(src) + " has no line `version = 3`");
  // The drop-in has the root's version: 3, or 4 on containerd 2.3 (whose CRI
  // runtime tables are version 3's).
  rendered = edit_lines(rendered, false, [&](const std::string& l) -> std::optional<std::string> {
    if (l == "version = 3") return "version = " + st.version;
    return std::nullopt;
  });
  install_dropin(run, cfg, rendered, st);
}

void install_dropin(Run& run, const std::string& cfg, const std::string& rendered, Install& st) {
  std::string dropin = run.host(kDropinRel);
  if (is_file(dropin) && read_file(dropin) == rendered) {
    run.log("drop-in " + std::string(kDropinRel) + " is up to date");
  } else {
    if (!is_dir(cc::dirname(dropin))) st.dropin_dir_created = "1";
    if (!run.dry) replace_file(dropin, rendered, 0644);
    run.change("installed drop-in " + std::string(kDropinRel));
    run.changed = true;
  }
  if (!is_file(cfg)) {
    if (!run.dry) replace_file(cfg, "version = " + st.version + "\nimports = [" + entry() + "]\n", 0644);
    st.imports_edit = "created";
    run.change("created " + run.strip_root(cfg) + " importing the drop-in");
    run.changed = true;
    return;
  }
  std::string text = read_file(cfg).value_or("");
  auto line = cc::imports_line(text);
  std::string covering = covering_entry(run, text);
  if (!covering.empty()) {
    run.log(run.strip_root(cfg) + " imports the drop-in already (\"" + covering + "\"); its bytes stay as they are");
    if (st.imports_edit.empty() || st.imports_edit == "none") {
      st.imports_edit = "none";
      st.imported_by = covering;
    }
  } else if (!line || line->empty()) {
    backup(run, cfg);
    if (!run.dry) rewrite(cfg, "imports = [" + entry() + "]\n" + text);
    st.imports_edit = "inserted";
    run.change("added an imports line to " + run.strip_root(cfg));
    run.changed = true;
  } else {
    auto imp = line->find("imports");
    auto eq = imp == std::string::npos ? imp : line->find('=', imp + 7);
    if (eq == std::string::npos || line->find('[', eq + 1) == std::string::npos)
      throw Error(run.strip_root(cfg) + ": cannot read its imports line; add " + entry() + " to it by hand");
    backup(run, cfg);
    if (!run.dry)
      rewrite(cfg, edit_lines(text, true, [](const std::string& l) -> std::optional<std::string> {
                auto open = imports_open(l);
                if (!open) return std::nullopt;
                return l.substr(0, *open) + "[" + entry() + ", " + l.substr(*open + 1);
              }));
    st.imports_edit = "prepended";
    run.change("added the drop-in to the imports of " + run.strip_root(cfg));
    run.changed = true;
  }
}

void uninstall_v3(Run& run, const std::string& cfg, const std::string& version) {
  std::string dropin = run.host(kDropinRel);
  std::string edit = state_get(run, "imports_edit");
  std::string own_line = "imports = [" + entry() + "]";
  if (is_file(cfg)) {
    std::string text = read_file(cfg).value_or("");
    if (edit == "created") {
      if (trimmed(text) == "version = " + version + "\n" + own_line) {
        std::remove(cfg.c_str());
      } else {
        backup(run, cfg);
        rewrite(cfg, edit_lines(text, false, [&](const std::string& l) -> std::optional<std::string> {
                  if (l == own_line) return std::string("\x7f");
                  return std::nullopt;
                }));
      }
      run.changed = true;
    } else if (edit == "inserted") {
      backup(run, cfg);
      rewrite(cfg, edit_lines(text, true, [&](const std::string& l) -> std::optional<std::string> {
                if (l == own_line) return std::string("\x7f");
                return std::nullopt;
              }));
      run.changed = true;
    } else if (edit == "prepended") {
      backup(run, cfg);
      rewrite(cfg, edit_lines(text, true, [&](const std::string& l) -> std::optional<std::string> {
                auto open = imports_open(l);
                std::string own = "[" + entry() + ", ";
                if (!open || l.compare(*open, own.size(), own) != 0) return std::nullopt;
                return l.substr(0, *open) + "[" + l.substr(*open + own.size());
              }));
      run.changed = true;
    }
  }
  if (exists(dropin)) {
    std::remove(dropin.c_str());
    if (state_get(run, "dropin_dir_created") == "1") ::rmdir(cc::dirname(dropin).c_str());
    run.log("removed drop-in " + std::string(kDropinRel));
    run.changed = true;
  }
}

}  // namespace specshim::shim::containerd
