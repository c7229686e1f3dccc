// SPDX-License-Identifier: Apache-2.0
// Doctor's containerd check: which containerd config files register
// specshim as a runtime, and whether their BinaryName is this binary; and
// whether containerd's own CRI CDI injection reads the spec dirs specshim's
// cdi modifier reads.
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "doctor/doctor.h"
#include "specshim/config.h"
#include "specshim/error.h"
#include "specshim/fs.h"

namespace specshim::shim::doctor {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// containerd's cdi_spec_dirs default, in 1.7 and 2.x alike. (No global
// std::vector: its initializer would run at every start, passthrough included.)
std::vector<std::string> containerd_cdi_dirs() {
  return {"/etc/cdi", "/var/run/cdi"};
}

struct Runtime {
  std::string name;
  std::string type;
  std::string binary;
};

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

// Containerd is the containerd binary doctor found and what its --version
// said: "containerd github.com/containerd/containerd/v2 v2.1.4 <commit>",
// Debian's "containerd github.com/containerd/containerd 1.6.20~ds1 ...".
struct Containerd {
  std::string binary;   // empty: none found
  std::string version;  // "1.6.20~ds1"; empty: unknown
  int major = 0, minor = 0;
  std::string problem;  // why the version is unknown, when a binary was found
};

// host_which finds an executable under the host root, as a name on PATH
// (this process's, else the usual directories) or as an absolute path; ""
// when there is none.
fs::path host_which(const Host& host, const std::string& name) {
  auto executable = [](const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos)
    return name.front() == '/' && executable(host.path(name)) ? host.path(name) : "";
  const char* env = std::getenv("PATH");
  std::string path = env && *env ? env : kDefaultPath;
  for (std::size_t start = 0; start <= path.size();) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    start = end + 1;
    if (dir.empty() || dir.front() != '/') continue;
    if (fs::path candidate = host.path(dir) / name; executable(candidate)) return candidate;
  }
  return "";
}

Containerd find_containerd(const Host& host) {
  Containerd c;
  c.binary = host_which(host, "containerd").string();
  if (c.binary.empty()) return c;
  Output out = probe({c.binary, "--version"});
  if (out.exit_code != 0) {
    c.problem = "`" + c.binary + " --version` failed (exit " + std::to_string(out.exit_code) + ")";
    return c;
  }
  // The first word after the name that starts with [v]MAJOR.MINOR.
  std::string first_line = out.text.substr(0, out.text.find('\n'));
  std::size_t pos = 0;
  while (pos < first_line.size()) {
    std::size_t end = first_line.find(' ', pos);
    if (end == std::string::npos) end = first_line.size();
    std::string word = first_line.substr(pos, end - pos);
    pos = end + 1;
    std::string v = !word.empty() && word.front() == 'v' ? word.substr(1) : word;
    int major = 0, minor = 0, used = 0;
    if (!v.empty() && v.front() >= '0' && v.front() <= '9' &&
        std::sscanf(v.c_str(), "%d.%d%n", &major, &minor, &used) == 2 && used > 0) {
      c.version = v;
      c.major = major;
      c.minor = minor;
      return c;
    }
  }
  c.problem = "`" + c.binary + " --version` names no version: " + shown(first_line);
  return c;
}

// at names a key's place for a message: "/etc/containerd/config.toml line 12".
std::string at(const std::string& file, const config::Section& table, std::string_view key) {
  std::string where = table.where(key);
  auto line = where.rfind("(line ");
  return file + (line == std::string::npos ? "" : " " + where.substr(line + 1, where.size() - line - 2));
}

// Setting is one key of a file's CRI table: its value, where it is set.
template <typename T>
struct Setting {
  std::optional<T> value;
  std::string at;  // "FILE line N"
};

// cri_table names the table of enable_cdi and cdi_spec_dirs in a config of
// the given version: the CRI plugin's "cri" in version 1,
// io.containerd.grpc.v1.cri in 2, io.containerd.cri.v1.runtime from 3 on.
const char* cri_table(std::int64_t version) {
  return version <= 1 ? "cri" : version == 2 ? "io.containerd.grpc.v1.cri" : "io.containerd.cri.v1.runtime";
}

// File is one containerd config file as containerd reads it.
struct File {
  fs::path path;
  bool loaded = false;  // containerd loads it (the root file and its imports)
  std::int64_t version = 1;
  bool has_cri = false;  // it has the CRI table that holds enable_cdi
  Setting<bool> enable_cdi;
  Setting<std::vector<std::string>> cdi_dirs;
  Setting<std::string> default_runtime;  // containerd.default_runtime_name of the CRI table
};

struct Scan {
  const Host& host;
  const fs::path& self;
  Check& check;
  int registered = 0;
  std::vector<File> files;
  // Found is a runtime as one file defines it, judged once every file is read.
  struct Found {
    fs::path file;
    bool loaded;
    Runtime runtime;
  };
  std::vector<Found> found;

  void runtime(const fs::path& file, const Runtime& r) {
    std::string where = file.string() + ": runtime `" + r.name + "`";
    bool named = r.name.find("specshim") != std::string::npos ||
                 fs::path(r.binary).filename().string().find("specshim") != std::string::npos;
    bool ours = !r.binary.empty() && same_file(host.path(r.binary), self);
    if (!named && !ours) return;
    if (r.binary.empty()) {
      check.add(Status::fail, where + " has no options.BinaryName: containerd runs plain runc");
      return;
    }
    if (fs::path(r.binary).is_relative()) {
      check.add(Status::warn,
                where + ": BinaryName `" + r.binary +
                    "` is relative: containerd's shim looks it up on its own PATH, which doctor cannot see");
      return;
    }
    std::error_code ec;
    if (ours) {
      ++registered;
      check.add(Status::ok, where + ": BinaryName `" + r.binary + "` is this binary");
    } else if (!fs::exists(host.path(r.binary), ec)) {
      check.add(Status::fail,
                where + ": BinaryName `" + r.binary + "` does not exist (this binary is " + self.string() + ")");
    } else {
      check.add(Status::fail, where + ": BinaryName `" + r.binary + "` is not this binary (" + self.string() + ")");
    }
    if (r.type != "io.containerd.runc.v2" && r.type != "io.containerd.runc.v1")
      check.add(Status::fail, where + ": runtime_type `" + r.type + "` ignores BinaryName (use io.containerd.runc.v2)");
  }

  // cri_cdi reads enable_cdi and cdi_spec_dirs of one file.
  static void cri_cdi(config::Section& root, File& f) {
    f.version = root.integer("version", 0, 1000).value_or(1);
    if (root.kind("plugins") != config::Kind::table) return;
    auto plugins = *root.table("plugins");
    const char* name = cri_table(f.version);
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

  // file scans one config and returns the imports it names, as host paths.
  std::vector<fs::path> file(const fs::path& path, bool loaded) {
    std::vector<fs::path> imports;
    File f;
    f.path = path;
    f.loaded = loaded;
    try {
      auto doc = config::Document::load(path);
      auto root = doc.root();
      for (const auto& r : runtimes(root)) found.push_back({path, loaded, r});
      for (const auto& imp : root.strings("imports").value_or(std::vector<std::string>{})) {
        // Relative imports are relative to the importing file (containerd's resolveImports);
        // a glob may match nothing, a plain path must exist.
        fs::path p = imp;
        fs::path full = p.is_absolute() ? host.path(imp) : path.parent_path() / p;
        auto matched = expand(full);
        if (matched.empty() && imp.find('*') == std::string::npos && loaded)
          check.add(Status::warn, path.string() + ": imports `" + imp + "`: " + full.string() +
                                      " does not exist: containerd fails to start on a missing import");
        for (const auto& m : matched) imports.push_back(m);
      }
      cri_cdi(root, f);
    } catch (const std::exception& e) {
      check.add(Status::fail, describe(e));
    }
    files.push_back(std::move(f));
    return imports;
  }

  // judge_runtimes checks every runtime found. containerd 2.x merges the
  // loaded files key by key, so a drop-in that sets only a handler's
  // BinaryName (install-on-host.sh --handler) has the runtime_type of the
  // root's table; runc without one anywhere is containerd's built-in
  // handler, of type io.containerd.runc.v2.
  void judge_runtimes() {
    for (auto& f : found) {
      Runtime r = f.runtime;
      if (r.type.empty() && f.loaded)
        for (const auto& other : found)
          if (other.loaded && other.runtime.name == r.name && !other.runtime.type.empty()) r.type = other.runtime.type;
      if (r.type.empty() && r.name == "runc") r.type = "io.containerd.runc.v2";
      runtime(f.file, r);
    }
  }

  // walk reads start and, breadth first as containerd does, the files it imports.
  void walk(std::vector<fs::path> queue, bool loaded) {
    while (!queue.empty()) {
      auto next = queue.front();
      queue.erase(queue.begin());
      if (std::any_of(files.begin(), files.end(), [&](const File& f) { return f.path == next; })) continue;
      for (auto& imp : file(next, loaded)) queue.push_back(imp);
    }
  }
};

// clean_dir is a spec dir as containerd and specshim would open it:
// lexically cleaned, and /var/run as /run (a symlink to it on every
// systemd distribution).
std::string clean_dir(const std::string& dir) {
  std::string s = specshim::fs::clean_path(dir);
  if (s == "/var/run" || s.rfind("/var/run/", 0) == 0) s.erase(0, 4);
  return s;
}

std::vector<std::string> missing_from(const std::vector<std::string>& dirs, const std::vector<std::string>& other) {
  std::vector<std::string> out;
  for (const auto& d : dirs)
    if (std::none_of(other.begin(), other.end(), [&](const std::string& o) { return clean_dir(o) == clean_dir(d); }))
      out.push_back(d);
  return out;
}

std::string listed(const std::vector<std::string>& dirs) {
  return dirs.empty() ? "none" : join(dirs, ", ");
}

enum class Line { v1_6, v1_7, v2, unknown };

// Which is the containerd line whose merge rules and defaults apply.
struct Which {
  Line line = Line::unknown;
  std::string version;  // "containerd 1.7.24", for messages; empty when unknown
};

// which_containerd tells the line from the binary's --version, else from
// the root config's version (3 and 4 are 2.x only), and says which.
Which which_containerd(const Scan& scan, const Containerd& ctd, Check& c) {
  std::int64_t root_version = 1;
  bool have_root = false;
  for (const auto& f : scan.files)
    if (f.loaded) {
      root_version = f.version;
      have_root = true;
      break;
    }
  Line line = Line::unknown;
  std::string version;
  if (!ctd.version.empty()) {
    version = "containerd " + ctd.version;
    line = ctd.major >= 2 ? Line::v2 : ctd.major == 1 && ctd.minor >= 7 ? Line::v1_7 : Line::v1_6;
    c.add(Status::info, ctd.binary + ": " + version);
  } else {
    std::string why = !ctd.problem.empty() ? ctd.problem : "no `containerd` on PATH under " + scan.host.root.string();
    if (have_root && root_version >= 3) {
      line = Line::v2;
      version = "containerd 2.x (a version " + std::to_string(root_version) + " config)";
      c.add(Status::info, "containerd version unknown (" + why + "): assuming 2.x, whose config version " +
                              std::to_string(root_version) + " is");
    } else {
      std::string config = have_root ? "a version " + std::to_string(root_version) + " config" : "no config";
      c.add(Status::info, "containerd version unknown (" + why + "): assuming 1.7 for " + config +
                              " (1.6 has no CDI; 2.x also reads version 2 configs, with CRI CDI on by default)");
    }
  }
  return {line, version};
}

// merged is the value a key of the CRI table has once containerd has read
// every file it loads. 1.x: an imported file replaces each plugin table it
// names, whole, so the last file with a CRI table decides (without the key:
// the default); 2.x merges imported files key by key, so the last file that
// sets it does.
template <typename T>
Setting<T> merged(const Scan& scan, Line line, Setting<T> File::*key) {
  Setting<T> out;
  for (const auto& f : scan.files)
    if (f.loaded && (line != Line::v2 ? f.has_cri : (f.*key).value.has_value())) out = f.*key;
  return out;
}

// check_cri_cdi says who injects CDI devices on this node: containerd 1.6
// has no CDI; 1.7 injects when enable_cdi = true (default false); 2.x by
// default. Where containerd injects, it resolves CRI's CDI requests from
// its own cdi_spec_dirs before specshim runs, so they must be specshim's.
void check_cri_cdi(const Scan& scan, const Which& which, const Loaded& loaded, Check& c) {
  const auto& [line, version] = which;
  if (line == Line::v1_6) {
    c.add(Status::info, version + " has no CDI (it came in 1.7): specshim alone injects CDI devices");
    return;
  }

  auto enable_cdi = merged(scan, line, &File::enable_cdi);
  auto cdi_dirs = merged(scan, line, &File::cdi_dirs);
  bool enabled = enable_cdi.value.value_or(line == Line::v2);
  std::string why = enable_cdi.value
                        ? std::string("enable_cdi = ") + (enabled ? "true" : "false") + ", " + enable_cdi.at
                    : line == Line::v2 ? "the default of " + version
                                       : "the default of containerd 1.7";
  std::vector<std::string> dirs = cdi_dirs.value.value_or(containerd_cdi_dirs());
  std::string dirs_why = cdi_dirs.value ? "cdi_spec_dirs, " + cdi_dirs.at : "the default";
  if (!enabled) {
    c.add(Status::info, "containerd's CRI CDI is off (" + why +
                            "): specshim alone injects CDI devices, from annotations; CRI's CDIDevices requests "
                            "(DRA claims, device plugins' cdi_devices) reach no runtime");
    return;
  }
  std::string on = "containerd's CRI CDI is on (" + why + ") and resolves CRI's CDI requests before specshim runs";
  if (!loaded.valid) {
    c.add(Status::info, on + ", from " + listed(dirs) + " (" + dirs_why +
                            "); specshim's config is invalid, its spec dirs are not compared");
    return;
  }
  if (!loaded.on("cdi") || !loaded.cdi_dirs) {
    c.add(Status::info, on + ", from " + listed(dirs) + " (" + dirs_why +
                            "); specshim's cdi modifier is off: containerd alone injects CDI devices");
    return;
  }
  const auto& ours = *loaded.cdi_dirs;
  auto only_ours = missing_from(ours, dirs);
  auto only_theirs = missing_from(dirs, ours);
  bool same_order = ours.size() == dirs.size() &&
                    std::equal(ours.begin(), ours.end(), dirs.begin(),
                               [](const std::string& a, const std::string& b) { return clean_dir(a) == clean_dir(b); });
  if (same_order) {
    c.add(Status::ok, on + ", from the spec dirs specshim's [cdi] reads (" + listed(dirs) +
                          "); specshim's cdi then adds nothing twice");
    return;
  }
  std::string text = on + ": its cdi_spec_dirs are " + listed(dirs) + " (" + dirs_why +
                     "), specshim's [cdi] spec-dirs are " + listed(ours);
  if (!only_ours.empty())
    text += "; a device whose spec is only in " + listed(only_ours) +
            " fails the create in containerd (\"CDI device injection failed: unresolvable CDI devices …\") and "
            "specshim never sees it";
  if (!only_theirs.empty())
    text += "; a device whose spec is only in " + listed(only_theirs) +
            " is injected by containerd, and specshim's cdi fails the create when the device's cdi.k8s.io/* "
            "annotation reaches it";
  if (only_ours.empty() && only_theirs.empty())
    text += "; the same dirs in another order: a device defined in two of them resolves to different specs";
  c.add(Status::warn, text + "; set both to the same list (docs/cdi.md, \"containerd's own CDI\")");
}

// nvidia_runtime_runs returns the low-level runtime NVIDIA's runtime execs:
// the first of its config's [nvidia-container-runtime] runtimes (default
// docker-runc, runc, crun) found on the host; where says where the list came from.
fs::path nvidia_runtime_runs(const Host& host, std::string& where) {
  const char* conf = "/etc/nvidia-container-runtime/config.toml";
  std::vector<std::string> candidates = {"docker-runc", "runc", "crun"};
  where = "NVIDIA's default runtimes list";
  try {
    auto doc = config::Document::load(host.path(conf));
    auto root = doc.root();
    if (root.kind("nvidia-container-runtime") == config::Kind::table)
      if (auto list = root.table("nvidia-container-runtime")->strings("runtimes")) {
        candidates = *list;
        where = std::string("runtimes in ") + conf;
      }
  } catch (const std::exception& e) {
    where = std::string(conf) + " unreadable (" + describe(e) + "), so NVIDIA's default runtimes list";
  }
  for (const auto& name : candidates)
    if (auto found = host_which(host, name); !found.empty()) return found;
  return "";
}

// check_default_handler says which handler a pod without a RuntimeClass
// gets (default_runtime_name, merged over the files containerd loads as
// its line merges them; containerd's own default is runc) and whether
// specshim is in that handler's chain: its BinaryName, and behind NVIDIA's
// runtime (nvidia-ctk runtime configure --set-as-default) the runtime that
// one runs.
void check_default_handler(const Scan& scan, Line line, const Loaded& loaded, Check& c) {
  auto [name, name_at] = merged(scan, line, &File::default_runtime);
  std::string handler = name.value_or("runc");
  std::string binary;  // the last loaded BinaryName of that handler
  for (const auto& f : scan.found)
    if (f.loaded && f.runtime.name == handler && !f.runtime.binary.empty()) binary = f.runtime.binary;
  std::string head = "pods without a RuntimeClass get the handler `" + handler + "` (" +
                     (name ? "default_runtime_name, " + name_at : std::string("containerd's default")) + ")";
  std::string rollout = "; pods reach specshim only through a RuntimeClass whose handler runs it";
  if (binary.empty()) {
    c.add(Status::info, head + ", which runs runc: specshim is not in their chain" + rollout);
    return;
  }
  fs::path exe = fs::path(binary).is_absolute() ? scan.host.path(binary) : fs::path();
  if (!exe.empty() && same_file(exe, scan.self)) {
    std::string then = loaded.settings.runtime_path.value_or("runc");
    c.add(Status::ok, head + ", which runs specshim (this binary), which runs " + then + " ([runtime] path)");
    return;
  }
  if (fs::path(binary).filename() == "nvidia-container-runtime") {
    std::string where;
    fs::path next = nvidia_runtime_runs(scan.host, where);
    if (!next.empty() && same_file(next, scan.self)) {
      c.add(Status::ok,
            head + ", which runs NVIDIA's runtime (" + binary + "), which runs specshim (this binary, " + where + ")");
      return;
    }
    c.add(Status::info, head + ", which runs NVIDIA's runtime (" + binary + "), which runs " +
                            (next.empty() ? std::string("none of its runtimes (not found)") : next.string()) + " (" +
                            where + "): specshim is not in their chain" + rollout +
                            ", or install-on-host.sh --handler " + handler + " --chain puts it in front");
    return;
  }
  c.add(Status::info,
        head + ", whose BinaryName `" + binary + "` is not specshim: specshim is not in their chain" + rollout);
}

}  // namespace

Check check_containerd(const Host& host, const Loaded& loaded, const fs::path& self_exe, const fs::path& config) {
  Check c("containerd");
  Scan scan{host, self_exe, c, 0, {}, {}};
  std::error_code ec;
  if (fs::exists(config, ec))
    scan.walk({config}, true);
  else
    c.add(Status::warn, config.string() + ": absent");
  // conf.d next to the root file, imported or not: where installers put
  // handler drop-ins (containerd reads only what imports names).
  scan.walk(expand(config.parent_path() / "conf.d/*.toml"), false);
  scan.judge_runtimes();
  if (scan.registered == 0) {
    std::vector<std::string> read;
    for (const auto& f : scan.files) read.push_back(f.path.string());
    c.add(Status::warn, "no containerd config registers this binary (" + self_exe.string() + ")" +
                            (read.empty() ? "" : "; read " + join(read, ", ")));
  }
  Which which = which_containerd(scan, find_containerd(host), c);
  check_default_handler(scan, which.line, loaded, c);
  check_cri_cdi(scan, which, loaded, c);
  return c;
}

}  // namespace specshim::shim::doctor
