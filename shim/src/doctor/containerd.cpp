// SPDX-License-Identifier: Apache-2.0
// Doctor's containerd check: which containerd config files register
// specshim as a runtime, and whether their BinaryName is this binary; and
// whether containerd's own CRI CDI injection reads the spec dirs specshim's
// cdi modifier reads.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "doctor/containerd_files.h"
#include "doctor/doctor.h"
#include "specshim/base/config.h"
#include "specshim/base/error.h"
#include "specshim/base/fs.h"

namespace specshim::shim::doctor {

namespace containerd_files {

bool Scan::this_binary(const Runtime& r) const {
  return !r.binary.empty() && same_file(host.path(r.binary), self);
}

void Scan::runtime(const fs::path& file, const Runtime& r) {
  std::string where = file.string() + ": runtime `" + r.name + "`";
  bool named = r.name.find("specshim") != std::string::npos ||
               fs::path(r.binary).filename().string().find("specshim") != std::string::npos;
  bool ours = this_binary(r);
  if (!named && !ours) return;
  if (r.binary.empty()) {
    check.add(Severity::fail, where + " has no options.BinaryName: containerd runs plain runc");
    return;
  }
  if (fs::path(r.binary).is_relative()) {
    check.add(Severity::warn,
              where + ": BinaryName `" + r.binary +
                  "` is relative: containerd's shim looks it up on its own PATH, which doctor cannot see");
    return;
  }
  std::error_code ec;
  if (ours) {
    ++registered;
    check.add(Severity::ok, where + ": BinaryName `" + r.binary + "` is this binary");
  } else if (!fs::exists(host.path(r.binary), ec)) {
    check.add(Severity::fail,
              where + ": BinaryName `" + r.binary + "` does not exist (this binary is " + self.string() + ")");
  } else {
    check.add(Severity::fail, where + ": BinaryName `" + r.binary + "` is not this binary (" + self.string() + ")");
  }
  if (r.type != "io.containerd.runc.v2" && r.type != "io.containerd.runc.v1")
    check.add(Severity::fail, where + ": runtime_type `" + r.type + "` ignores BinaryName (use io.containerd.runc.v2)");
}

void Scan::judge_runtimes() {
  for (auto& f : found) {
    Runtime r = f.runtime;
    if (r.type.empty() && f.loaded)
      for (const auto& other : found)
        if (other.loaded && other.runtime.name == r.name && !other.runtime.type.empty()) r.type = other.runtime.type;
    if (r.type.empty() && r.name == "runc") r.type = "io.containerd.runc.v2";
    runtime(f.file, r);
  }
}

}  // namespace containerd_files

namespace {

using namespace containerd_files;

namespace fs = std::filesystem;

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// containerd's cdi_spec_dirs default, in 1.7 and 2.x alike. (No global
// std::vector: its initializer would run at every start, passthrough included.)
std::vector<std::string> containerd_cdi_dirs() {
  return {"/etc/cdi", "/var/run/cdi"};
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
    c.add(Severity::info, ctd.binary + ": " + version);
  } else {
    std::string why = !ctd.problem.empty() ? ctd.problem : "no `containerd` on PATH under " + scan.host.root.string();
    if (have_root && root_version >= 3) {
      line = Line::v2;
      version = "containerd 2.x (a version " + std::to_string(root_version) + " config)";
      c.add(Severity::info, "containerd version unknown (" + why + "): assuming 2.x, whose config version " +
                                std::to_string(root_version) + " is");
    } else {
      std::string config = have_root ? "a version " + std::to_string(root_version) + " config" : "no config";
      c.add(Severity::info, "containerd version unknown (" + why + "): assuming 1.7 for " + config +
                                " (1.6 has no CDI; 2.x also reads version 2 configs, with CRI CDI on by default)");
    }
  }
  return {line, version};
}

// check_cri_cdi says who injects CDI devices on this node: containerd 1.6
// has no CDI; 1.7 injects when enable_cdi = true (default false); 2.x by
// default. Where containerd injects, it resolves CRI's CDI requests from
// its own cdi_spec_dirs before specshim runs, so they must be specshim's.
void check_cri_cdi(const Scan& scan, const Which& which, const Loaded& loaded, Check& c) {
  const auto& [line, version] = which;
  if (line == Line::v1_6) {
    c.add(Severity::info, version + " has no CDI (it came in 1.7): specshim alone injects CDI devices");
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
    c.add(Severity::info, "containerd's CRI CDI is off (" + why +
                              "): specshim alone injects CDI devices, from annotations; CRI's CDIDevices requests "
                              "(DRA claims, device plugins' cdi_devices) reach no runtime");
    return;
  }
  std::string on = "containerd's CRI CDI is on (" + why + ") and resolves CRI's CDI requests before specshim runs";
  if (!loaded.valid) {
    c.add(Severity::info, on + ", from " + listed(dirs) + " (" + dirs_why +
                              "); specshim's config is invalid, its spec dirs are not compared");
    return;
  }
  if (!loaded.on("cdi") || !loaded.cdi_dirs) {
    c.add(Severity::info, on + ", from " + listed(dirs) + " (" + dirs_why +
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
    c.add(Severity::ok, on + ", from the spec dirs specshim's [cdi] reads (" + listed(dirs) +
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
  c.add(Severity::warn, text + "; set both to the same list (docs/cdi.md, \"containerd's own CDI\")");
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
    c.add(Severity::info, head + ", which runs runc: specshim is not in their chain" + rollout);
    return;
  }
  fs::path exe = fs::path(binary).is_absolute() ? scan.host.path(binary) : fs::path();
  if (!exe.empty() && same_file(exe, scan.self)) {
    std::string then = loaded.settings.runtime_path.value_or("runc");
    c.add(Severity::ok, head + ", which runs specshim (this binary), which runs " + then + " ([runtime] path)");
    return;
  }
  if (fs::path(binary).filename() == "nvidia-container-runtime") {
    std::string where;
    fs::path next = nvidia_runtime_runs(scan.host, where);
    if (!next.empty() && same_file(next, scan.self)) {
      c.add(Severity::ok,
            head + ", which runs NVIDIA's runtime (" + binary + "), which runs specshim (this binary, " + where + ")");
      return;
    }
    c.add(Severity::info, head + ", which runs NVIDIA's runtime (" + binary + "), which runs " +
                              (next.empty() ? std::string("none of its runtimes (not found)") : next.string()) + " (" +
                              where + "): specshim is not in their chain" + rollout +
                              ", or install-on-host.sh --handler " + handler + " --chain puts it in front");
    return;
  }
  c.add(Severity::info,
        head + ", whose BinaryName `" + binary + "` is not specshim: specshim is not in their chain" + rollout);
}

}  // namespace

Check check_containerd(const Host& host, const Loaded& loaded, const fs::path& self_exe, const fs::path& config,
                       HandlerCgroups& handlers) {
  Check c("containerd");
  Scan scan{host, self_exe, c, 0, {}, {}};
  std::error_code ec;
  if (fs::exists(config, ec))
    scan.walk({config}, true);
  else
    c.add(Severity::warn, config.string() + ": absent");
  // conf.d next to the root file, imported or not: where installers put
  // handler drop-ins (containerd reads only what imports names).
  scan.walk(expand(config.parent_path() / "conf.d/*.toml"), false);
  scan.judge_runtimes();
  if (scan.registered == 0) {
    std::vector<std::string> read;
    for (const auto& f : scan.files) read.push_back(f.path.string());
    c.add(Severity::warn, "no containerd config registers this binary (" + self_exe.string() + ")" +
                              (read.empty() ? "" : "; read " + join(read, ", ")));
  }
  Which which = which_containerd(scan, find_containerd(host), c);
  check_default_handler(scan, which.line, loaded, c);
  handlers = scan.handler_cgroups(which.line);
  judge_cgroup_driver(host, loaded.kubelet.root, handlers, c);
  check_cri_cdi(scan, which, loaded, c);
  return c;
}

}  // namespace specshim::shim::doctor
