// SPDX-License-Identifier: Apache-2.0
// Reading containerd's config files (containerd_files.h).
#include "doctor/containerd_files.h"

#include <algorithm>

#include "specshim/base/error.h"

namespace specshim::shim::doctor::containerd_files {
namespace {

// at names a key's place for a message: "/etc/containerd/config.toml line 12".
std::string at(const std::string& file, const config::Section& table, std::string_view key) {
  std::string where = table.where(key);
  auto line = where.rfind("(line ");
  return file + (line == std::string::npos ? "" : " " + where.substr(line + 1, where.size() - line - 2));
}

// runtimes walks plugins.<any>.containerd.runtimes.<name>: the CRI plugin is
// "cri" in config version 1, io.containerd.grpc.v1.cri in 2 and
// io.containerd.cri.v1.runtime in 3.
std::vector<Runtime> runtimes(config::Section& root, const std::string& file) {
  std::vector<Runtime> out;
  if (root.kind("plugins") != config::Kind::table) return out;
  auto plugins = *root.table("plugins");
  for (const auto& plugin : plugins.keys()) {
    if (plugins.kind(plugin) != config::Kind::table) continue;
    auto p = *plugins.table(plugin);
    if (p.kind("containerd") != config::Kind::table) continue;
    auto ctd = *p.table("containerd");
    if (ctd.kind("runtimes") != config::Kind::table) continue;
    auto table = *ctd.table("runtimes");
    for (const auto& name : table.keys()) {
      if (table.kind(name) != config::Kind::table) continue;
      auto rt = *table.table(name);
      Runtime r{name, rt.string("runtime_type").value_or(""), "", {}};
      if (rt.kind("options") == config::Kind::table) {
        auto options = *rt.table("options");
        r.binary = options.string("BinaryName").value_or("");
        if (options.has("SystemdCgroup"))
          r.systemd_cgroup = {options.boolean("SystemdCgroup"), at(file, options, "SystemdCgroup")};
      }
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace

void Scan::cri_cdi(config::Section& root, File& f) {
  f.version = root.integer("version", 0, 1000).value_or(1);
  if (root.kind("plugins") != config::Kind::table) return;
  auto plugins = *root.table("plugins");
  const std::string name = node::containerd_config::cri_plugin(static_cast<int>(f.version));
  if (plugins.kind(name) != config::Kind::table) return;
  auto cri = *plugins.table(name);
  f.has_cri = true;
  std::string file = f.path.string();
  if (cri.has("enable_cdi")) {
    f.enable_cdi = {cri.boolean("enable_cdi"), at(file, cri, "enable_cdi")};
  }
  if (cri.has("cdi_spec_dirs")) {
    f.cdi_dirs = {cri.strings("cdi_spec_dirs"), at(file, cri, "cdi_spec_dirs")};
  }
  if (cri.kind("containerd") == config::Kind::table) {
    auto ctd = *cri.table("containerd");
    if (ctd.has("default_runtime_name")) {
      f.default_runtime = {ctd.string("default_runtime_name"), at(file, ctd, "default_runtime_name")};
    }
  }
}

std::vector<fs::path> Scan::file(const fs::path& path, bool loaded) {
  std::vector<fs::path> imports;
  File f;
  f.path = path;
  f.loaded = loaded;
  try {
    auto doc = config::Document::load(path);
    auto root = doc.root();
    for (const auto& r : runtimes(root, path.string())) found.push_back({path, loaded, r});
    for (const auto& imp : root.strings("imports").value_or(std::vector<std::string>{})) {
      // Relative imports are relative to the importing file (containerd's resolveImports);
      // a glob may match nothing, a plain path must exist.
      fs::path p = imp;
      fs::path full = p.is_absolute() ? host.path(imp) : path.parent_path() / p;
      auto matched = expand(full);
      if (matched.empty() && imp.find('*') == std::string::npos && loaded)
        check.add(Severity::warn, path.string() + ": imports `" + imp + "`: " + full.string() +
                                      " does not exist: containerd fails to start on a missing import");
      for (const auto& m : matched) imports.push_back(m);
    }
    cri_cdi(root, f);
  } catch (const std::exception& e) {
    check.add(Severity::fail, describe(e));
  }
  files.push_back(std::move(f));
  return imports;
}

void Scan::walk(std::vector<fs::path> queue, bool loaded) {
  while (!queue.empty()) {
    auto next = queue.front();
    queue.erase(queue.begin());
    if (std::any_of(files.begin(), files.end(), [&](const File& f) { return f.path == next; })) continue;
    for (auto& imp : file(next, loaded)) queue.push_back(imp);
  }
}

}  // namespace specshim::shim::doctor::containerd_files
