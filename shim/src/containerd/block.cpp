// SPDX-License-Identifier: Apache-2.0
// Config version 2 (containerd 1.x): the new handler "specshim" as a marked
// block appended to the root config (containerd 1.x replaces a plugin's
// whole table for each imported file, so a drop-in would wipe the node's
// other CRI settings), and the block taken out again.
#include <cstdio>

#include "containerd/install.h"

namespace specshim::shim::containerd {
namespace {

constexpr const char* kSnippetBinary = "BinaryName = \"/usr/bin/specshim\"";

bool blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

// indent_of: the line is [[:space:]]* then rest exactly; returns the indent.
std::optional<std::string> indented(const std::string& line, const std::string& rest) {
  std::size_t i = 0;
  while (i < line.size() && blank(line[i])) ++i;
  if (line.compare(i, std::string::npos, rest) != 0) return std::nullopt;
  return line.substr(0, i);
}

std::string default_runc_table(const Run& run, const std::string& cfg) {
  std::string own;
  if (is_file(cfg)) own = split_block(read_file(cfg).value_or("")).outside;
  std::string name;
  for (const auto& line : cc::lines(own)) {
    std::size_t i = 0;
    while (i < line.size() && blank(line[i])) ++i;
    if (line.compare(i, 20, "default_runtime_name") != 0) continue;
    i += 20;
    while (i < line.size() && blank(line[i])) ++i;
    if (i >= line.size() || line[i] != '=') continue;
    ++i;
    while (i < line.size() && blank(line[i])) ++i;
    if (i >= line.size() || line[i] != '"') continue;
    auto end = line.find('"', i + 1);
    if (end == std::string::npos) continue;
    name = line.substr(i + 1, end - i - 1);
    break;
  }
  if (name.empty()) name = "runc";
  const std::string head = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.";
  for (const auto& line : cc::lines(own)) {
    std::size_t i = 0;
    while (i < line.size() && blank(line[i])) ++i;
    if (line.compare(i, head.size(), head) != 0) continue;
    std::string rest = line.substr(i + head.size());
    if (rest.rfind(name + "]", 0) == 0 || rest.rfind("\"" + name + "]", 0) == 0 || rest.rfind(name + "\"]", 0) == 0 ||
        rest.rfind("\"" + name + "\"]", 0) == 0)
      return "";
  }
  if (name != "runc")
    throw Error("default_runtime_name " + q(name) + " has no runtimes table in " + run.strip_root(cfg) +
                "; fix that first");
  std::string out =
      "\n# containerd 1.x forgets its built-in runc handler once the config names any\n"
      "# runtime; restate it (containerd's defaults) so default_runtime_name = \"runc\" works.\n"
      "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
      "  runtime_type = \"io.containerd.runc.v2\"\n";
  if (uses_systemd_cgroup(cfg))
    out +=
        "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
        "    SystemdCgroup = true\n";
  return out;
}

}  // namespace

bool uses_systemd_cgroup(const std::string& cfg) {
  if (!is_file(cfg)) return false;
  for (const auto& line : cc::lines(read_file(cfg).value_or(""))) {
    std::size_t i = 0;
    while (i < line.size() && blank(line[i])) ++i;
    if (line.compare(i, 13, "SystemdCgroup") != 0) continue;
    i += 13;
    while (i < line.size() && blank(line[i])) ++i;
    if (i >= line.size() || line[i] != '=') continue;
    ++i;
    while (i < line.size() && blank(line[i])) ++i;
    if (line.compare(i, 4, "true") == 0) return true;
  }
  return false;
}

std::string render_snippet(const Run& run, const std::string& src, const std::string& cfg) {
  auto text = read_file(src);
  if (!text) throw Error("snippet " + q(src) + " missing from the source root");
  bool found = false;
  for (const auto& line : cc::lines(*text)) found = found || indented(line, kSnippetBinary);
  if (!found) throw Error("snippet " + q(src) + " has no BinaryName line");
  bool systemd = uses_systemd_cgroup(cfg);
  std::string out;
  std::size_t start = 0;
  while (start < text->size()) {
    auto nl = text->find('\n', start);
    std::size_t end = nl == std::string::npos ? text->size() : nl;
    std::string line = text->substr(start, end - start);
    if (auto indent = indented(line, kSnippetBinary)) {
      line = *indent + "BinaryName = \"" + run.opt.binary_path + "\"";
      if (systemd) line += "\n" + *indent + "SystemdCgroup = true";
    }
    out += line + (nl == std::string::npos ? "" : "\n");
    start = end + 1;
  }
  return out;
}

void install_v2(Run& run, const std::string& cfg, Install& st) {
  std::string block =
      std::string(kBeginMark) + "\n" +
      render_snippet(run, run.opt.source_root + "/usr/share/specshim/containerd/containerd-1.x.toml", cfg) +
      default_runc_table(run, cfg) + kEndMark + "\n";
  if (is_file(cfg)) {
    std::string text = read_file(cfg).value_or("");
    const std::string table = "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.specshim]";
    bool by_hand = false;
    for (const auto& line : cc::lines(text)) {
      std::size_t i = 0;
      while (i < line.size() && blank(line[i])) ++i;
      by_hand = by_hand || line.compare(i, table.size(), table) == 0;
    }
    if (!has_line(text, kBeginMark) && by_hand)
      throw Error(
          run.strip_root(cfg) +
          " already defines runtimes.specshim outside specshim's markers; remove it or leave it managed by hand");
  }
  install_block(run, cfg, block, "the specshim handler", st);
}

void install_block(Run& run, const std::string& cfg, const std::string& block, const std::string& what, Install& st) {
  std::string text;
  bool created = false;
  if (is_file(cfg)) {
    text = read_file(cfg).value_or("");
    if (has_line(text, kBeginMark)) {
      if (split_block(text).inside == block) {
        run.log("containerd config already has " + what);
        return;
      }
      backup(run, cfg);
      text = remove_block(run, cfg, text);
    } else {
      backup(run, cfg);
    }
  } else {
    text = "version = 2\n";
    created = true;
    st.v2_created = "1";
  }
  if (!ends_with_newline(text)) {
    text += "\n";
    st.v2_newline = "1";
  }
  text += block;
  if (!run.dry) {
    if (created) {
      replace_file(cfg, text, 0644);
    } else {
      rewrite(cfg, text);
    }
  }
  run.change("added " + what + " to " + run.strip_root(cfg) + " (containerd 1.x: in place, not as an import)");
  run.changed = true;
}

void uninstall_v2(Run& run, const std::string& cfg) {
  if (!is_file(cfg)) return;
  std::string text = read_file(cfg).value_or("");
  if (!has_line(text, kBeginMark)) return;
  backup(run, cfg);
  text = remove_block(run, cfg, text);
  if (state_get(run, "v2_added_newline") == "1" && ends_with_newline(text) && !text.empty()) text.pop_back();
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  if (state_get(run, "v2_created_config") == "1" && trimmed == "version = 2") {
    std::remove(cfg.c_str());
    for (const auto& b : cc::glob_sorted(cfg + ".specshim-backup.*")) std::remove(b.c_str());
  } else {
    rewrite(cfg, text);
  }
  run.log("removed the specshim handler from " + run.strip_root(cfg));
  run.changed = true;
}

}  // namespace specshim::shim::containerd
