// SPDX-License-Identifier: Apache-2.0
// Doctor's containerd check: which containerd config files register
// specshim as a runtime, and whether their BinaryName is this binary.
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>

#include "doctor/doctor.h"
#include "specshim/config.h"
#include "specshim/error.h"

namespace specshim::shim::doctor {
namespace {

constexpr const char* kConfig = "/etc/containerd/config.toml";
constexpr const char* kConfD = "/etc/containerd/conf.d/*.toml";

struct Runtime {
  std::string name;
  std::string type;
  std::string binary;
};

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

std::vector<std::filesystem::path> expand(const std::filesystem::path& pattern) {
  std::vector<std::filesystem::path> out;
  glob_t g{};
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  return out;
}

// runtimes walks plugins.<any>.containerd.runtimes.<name>: the CRI plugin is
// "cri" in config version 1, io.containerd.grpc.v1.cri in 2 and
// io.containerd.cri.v1.runtime in 3.
std::vector<Runtime> runtimes(config::Section& root) {
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
      Runtime r{name, rt.string("runtime_type").value_or(""), ""};
      if (rt.kind("options") == config::Kind::table) r.binary = rt.table("options")->string("BinaryName").value_or("");
      out.push_back(r);
    }
  }
  return out;
}

struct Scan {
  const Host& host;
  const std::filesystem::path& self;
  Check& check;
  int registered = 0;

  void runtime(const std::filesystem::path& file, const Runtime& r) {
    std::string where = file.string() + ": runtime `" + r.name + "`";
    bool named = r.name.find("specshim") != std::string::npos ||
                 std::filesystem::path(r.binary).filename().string().find("specshim") != std::string::npos;
    bool ours = !r.binary.empty() && same_file(host.path(r.binary), self);
    if (!named && !ours) return;
    if (r.binary.empty()) {
      check.add(Status::fail, where + " has no options.BinaryName: containerd runs plain runc");
      return;
    }
    if (std::filesystem::path(r.binary).is_relative()) {
      check.add(Status::warn,
                where + ": BinaryName `" + r.binary +
                    "` is relative: containerd's shim looks it up on its own PATH, which doctor cannot see");
      return;
    }
    std::error_code ec;
    if (ours) {
      ++registered;
      check.add(Status::ok, where + ": BinaryName `" + r.binary + "` is this binary");
    } else if (!std::filesystem::exists(host.path(r.binary), ec)) {
      check.add(Status::fail,
                where + ": BinaryName `" + r.binary + "` does not exist (this binary is " + self.string() + ")");
    } else {
      check.add(Status::fail, where + ": BinaryName `" + r.binary + "` is not this binary (" + self.string() + ")");
    }
    if (r.type != "io.containerd.runc.v2" && r.type != "io.containerd.runc.v1")
      check.add(Status::fail, where + ": runtime_type `" + r.type + "` ignores BinaryName (use io.containerd.runc.v2)");
  }

  // file scans one config and returns the imports it names, as host paths.
  std::vector<std::filesystem::path> file(const std::filesystem::path& path) {
    std::vector<std::filesystem::path> imports;
    try {
      auto doc = config::Document::load(path);
      auto root = doc.root();
      for (const auto& r : runtimes(root)) runtime(path, r);
      for (const auto& imp : root.strings("imports").value_or(std::vector<std::string>{})) {
        // Relative imports are relative to the importing file (containerd's resolveImports).
        std::filesystem::path p = imp;
        for (const auto& f : expand(p.is_absolute() ? host.path(imp) : path.parent_path() / p)) imports.push_back(f);
      }
    } catch (const std::exception& e) {
      check.add(Status::fail, describe(e));
    }
    return imports;
  }
};

}  // namespace

Check check_containerd(const Host& host, const std::filesystem::path& self_exe) {
  Check c("containerd");
  Scan scan{host, self_exe, c};
  std::vector<std::filesystem::path> seen, queue;
  std::error_code ec;
  if (std::filesystem::exists(host.path(kConfig), ec))
    queue.push_back(host.path(kConfig));
  else
    c.add(Status::warn, host.path(kConfig).string() + ": absent");
  for (const auto& f : expand(host.path(kConfD))) queue.push_back(f);
  while (!queue.empty()) {
    auto next = queue.front();
    queue.erase(queue.begin());
    if (std::find(seen.begin(), seen.end(), next) != seen.end()) continue;
    seen.push_back(next);
    for (auto& imp : scan.file(next)) queue.push_back(imp);
  }
  if (scan.registered == 0) {
    std::string files;
    for (const auto& f : seen) files += (files.empty() ? "" : ", ") + f.string();
    c.add(Status::warn, "no containerd config registers this binary (" + self_exe.string() + ")" +
                            (files.empty() ? "" : "; read " + files));
  }
  return c;
}

}  // namespace specshim::shim::doctor
