// SPDX-License-Identifier: Apache-2.0
// The root config's imports as containerd loads them (one level, entries in
// turn, a glob's matches sorted by bytes, a file once), and the config
// version: the root's own, --config-version, or the node's containerd release.
#include <algorithm>
#include <set>
#include <sstream>

#include "containerd/install.h"
#include "specshim/base/fs.h"

namespace specshim::shim::containerd {

bool covers(const Run& run, const std::string& entry) {
  std::string full = entry;
  if (full.empty() || full[0] != '/') full = cc::dirname(run.opt.containerd_config) + "/" + entry;
  std::string dir = specshim::fs::clean_path(cc::dirname(full));
  std::string name = full.substr(full.rfind('/') + 1);
  std::string dropin = kDropinRel;
  return dir == cc::dirname(dropin) && cc::name_matches(name, dropin.substr(dropin.rfind('/') + 1));
}

std::string covering_entry(const Run& run, const std::string& text) {
  for (const auto& e : cc::import_entries(text))
    if (covers(run, e)) return e;
  return "";
}

std::vector<std::string> import_order(const Run& run, const std::string& cfg) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::string dropin = run.host(kDropinRel);
  std::string text = read_file(cfg).value_or("");
  if (covering_entry(run, text).empty()) {
    out.push_back(dropin);
    seen.insert(dropin);
  }
  for (const auto& entry : cc::import_entries(text)) {
    std::string pattern = !entry.empty() && entry[0] == '/'
                              ? run.host(entry)
                              : run.host(cc::dirname(run.opt.containerd_config) + "/" + entry);
    auto matches = cc::glob_sorted(pattern);
    if (covers(run, entry)) matches.push_back(dropin);
    std::sort(matches.begin(), matches.end());
    matches.erase(std::unique(matches.begin(), matches.end()), matches.end());
    for (const auto& f : matches) {
      if (!seen.insert(f).second) continue;
      if (is_file(f) || f == dropin) out.push_back(f);
    }
  }
  return out;
}

std::vector<std::string> import_files(const Run& run, const std::string& cfg) {
  std::vector<std::string> out;
  std::string dropin = run.host(kDropinRel);
  for (const auto& f : import_order(run, cfg))
    if (f != dropin) out.push_back(f);
  return out;
}

namespace {

// release_field is the third field of each line of `containerd --version`,
// without a leading v ("containerd github.com/containerd/containerd/v2 v2.3.4 <commit>").
std::string release_field(const std::string& out) {
  std::string release;
  std::istringstream lines(out);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string w, third;
    for (int i = 0; i < 3 && words >> w; ++i)
      if (i == 2) third = w;
    if (!third.empty() && third[0] == 'v') third.erase(0, 1);
    release += (first ? "" : "\n") + third;
    first = false;
  }
  return release;
}

}  // namespace

std::string config_version(Run& run, const std::string& cfg) {
  std::string v;
  bool file = is_file(cfg);
  if (file) v = cc::file_version(read_file(cfg).value_or(""));
  const std::string& given = run.opt.config_version;
  if (!v.empty() && !given.empty() && v != given)
    throw Error(run.strip_root(cfg) + " says version = " + v + " and --config-version says " + given +
                "; leave --config-version out (it is for a node without a config file, or one without a version "
                "line)");
  if (!v.empty() || !given.empty()) return v.empty() ? given : v;
  if (file) return "1";
  // No config file: containerd runs on built-in defaults; ask it for its version.
  auto out = version_output(run);
  if (!out) {
    if (!run.opt.version_cmd.empty()) throw Error(q(run.opt.version_cmd) + " failed; pass --config-version");
    throw Error("no " + run.strip_root(cfg) +
                " and cannot run the node's containerd --version; pass --config-version 2 (containerd 1.6/1.7), 3 "
                "(2.0-2.2) or 4 (2.3 and later)");
  }
  std::string shown_out = *out;
  while (!shown_out.empty() && shown_out.back() == '\n') shown_out.pop_back();
  auto version = cc::config_version_of_release(release_field(*out));
  if (!version) throw Error("cannot tell the containerd version from " + q(shown_out) + "; pass --config-version");
  return std::to_string(*version);
}

void check_versions(const Run& run, const std::string& cfg, const std::string& root) {
  if (!is_file(cfg)) return;
  for (const auto& f : import_files(run, cfg)) {
    std::string v = cc::file_version(read_file(f).value_or(""));
    if (v.empty()) continue;
    if (std::stoll(v) > std::stoll(root))
      throw Error(run.strip_root(f) + " (imported by " + run.opt.containerd_config + ") is containerd config version " +
                  v + ", higher than the root config's version " + root +
                  ": containerd 2.3.0-2.3.4 refuse to start (\"drop-in config version " + v +
                  " higher than root config version " + root +
                  "\") and 2.0-2.2 lose the root's CRI settings. Give the two files the same version, then run again");
  }
}

}  // namespace specshim::shim::containerd
