// SPDX-License-Identifier: Apache-2.0
// containerd config files: top-level keys, names per version, globs and
// paths (containerd_config.h).
#include <fnmatch.h>
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>

#include "specshim/base/fs.h"
#include "specshim/node/containerd_config.h"

namespace specshim::node::containerd_config {
namespace {

bool space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && space(s[i])) ++i;
  return i;
}

// starts_table: the line matches /^[[:space:]]*\[/, where awk stops reading the top level.
bool starts_table(std::string_view line) {
  std::size_t i = skip_space(line, 0);
  return i < line.size() && line[i] == '[';
}

// assigns: the line matches /^[[:space:]]*NAME[[:space:]]*=/; returns where the value starts.
std::optional<std::size_t> assigns(std::string_view line, std::string_view name) {
  std::size_t i = skip_space(line, 0);
  if (line.substr(i, name.size()) != name) return std::nullopt;
  i = skip_space(line, i + name.size());
  if (i >= line.size() || line[i] != '=') return std::nullopt;
  return i + 1;
}

}  // namespace

std::string file_version(std::string_view text) {
  for (const auto& line : lines(text)) {
    if (starts_table(line)) return "";
    auto v = assigns(line, "version");
    if (!v) continue;
    std::size_t i = skip_space(line, *v);
    if (i >= line.size() || !std::isdigit(static_cast<unsigned char>(line[i]))) continue;
    std::size_t j = i;
    while (j < line.size() && std::isdigit(static_cast<unsigned char>(line[j]))) ++j;
    return line.substr(i, j - i);
  }
  return "";
}

std::optional<std::string> imports_line(std::string_view text) {
  for (const auto& line : lines(text)) {
    if (starts_table(line)) return std::nullopt;
    if (assigns(line, "imports")) return line;
  }
  return std::nullopt;
}

std::vector<std::string> import_entries(std::string_view text) {
  std::vector<std::string> out;
  bool on = false;
  for (const auto& whole : lines(text)) {
    if (starts_table(whole)) break;
    if (assigns(whole, "imports")) on = true;
    if (!on) continue;
    std::string_view line = whole;
    line = line.substr(0, line.find('#'));
    for (std::size_t p = 0; p < line.size(); ++p) {
      char q = line[p];
      if (q != '"' && q != '\'') continue;
      auto end = line.find(q, p + 1);
      if (end == std::string_view::npos) continue;
      out.emplace_back(line.substr(p + 1, end - p - 1));
      p = end;
    }
    if (whole.find(']') != std::string::npos) break;
  }
  return out;
}

std::string cri_plugin(int version) {
  return version <= 1 ? "cri" : version == 2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.runtime";
}

HandlerPaths handler_paths(int version, const std::string& handler) {
  std::string plugin = version == 2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.runtime";
  HandlerPaths p;
  p.cri = "\"plugins\".\"" + plugin + "\"";
  p.handler = p.cri + ".\"containerd\".\"runtimes\".\"" + handler + "\"";
  p.options = p.handler + ".\"options\"";
  p.table = "plugins.\"" + plugin + "\".containerd.runtimes." + handler;
  return p;
}

std::optional<int> config_version_of_release(std::string_view release) {
  std::string r(release);
  auto dot = r.find('.');
  std::string major = r.substr(0, dot);
  std::string minor = dot == std::string::npos ? r : r.substr(dot + 1);
  minor = minor.substr(0, minor.find('.'));
  bool digit = !minor.empty() && std::isdigit(static_cast<unsigned char>(minor[0]));
  if (major == "1" && digit) return 2;
  if (major == "2" && (minor == "0" || minor == "1" || minor == "2")) return 3;
  if (major == "2" && digit) return 4;
  return std::nullopt;
}

std::string dirname(std::string_view path) {
  std::string p(path);
  if (p.empty()) return ".";
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  p.erase(slash);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p.empty() ? "/" : p;
}

bool same_file(const fs::path& a, const fs::path& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::vector<fs::path> expand(const fs::path& pattern) {
  std::vector<fs::path> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

std::vector<std::string> glob_sorted(const std::string& pattern) {
  std::vector<std::string> out;
  for (const auto& p : expand(pattern)) out.push_back(p.string());
  std::sort(out.begin(), out.end());
  return out;
}

bool name_matches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

std::string clean_dir(const std::string& dir) {
  std::string s = specshim::fs::clean_path(dir);
  if (s == "/var/run" || s.rfind("/var/run/", 0) == 0) s.erase(0, 4);
  return s;
}

}  // namespace specshim::node::containerd_config
