// SPDX-License-Identifier: Apache-2.0
// A running container's cgroups and their device rules: where they are
// (/proc/PID/cgroup and the mount table), the v1 devices files, and the
// cgroup v2 device program, replaced through raw bpf(2).
#include "specshim/live/cgroup_devices.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <sstream>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"

namespace specshim::live {
namespace {

namespace sfs = std::filesystem;

// unescape undoes mountinfo's octal escapes (\040 for a space, \134 for \).
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool has_option(const std::string& options, std::string_view want) {
  std::istringstream s(options);
  for (std::string o; std::getline(s, o, ',');)
    if (o == want) return true;
  return false;
}

// under returns where cgroup path lives below a mount of its hierarchy, or
// nullopt when the mount shows another part of it.
std::optional<sfs::path> under(const MountEntry& m, const std::string& cgroup) {
  std::string root = m.root == "/" ? "" : m.root;
  if (cgroup.compare(0, root.size(), root) != 0 || (cgroup.size() > root.size() && cgroup[root.size()] != '/'))
    return std::nullopt;
  std::string rest = cgroup.substr(root.size());
  while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
  return rest.empty() ? sfs::path(m.point) : sfs::path(m.point) / rest;
}

// unit_in returns the deepest ".scope" or ".service" component of a cgroup
// path: the systemd unit that owns it.
std::string unit_in(const std::string& cgroup) {
  std::string unit;
  std::istringstream s(cgroup);
  for (std::string part; std::getline(s, part, '/');)
    if (part.ends_with(".scope") || part.ends_with(".service")) unit = part;
  return unit;
}

// bpf is the raw syscall.
long bpf(int cmd, bpf_attr& attr) {
  return ::syscall(SYS_bpf, cmd, &attr, sizeof attr);
}

fs::Fd open_cgroup(const sfs::path& dir) {
  int fd = ::open(dir.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open cgroup `" + dir.string() + "`");
  return fs::Fd(fd);
}

struct Query {
  std::vector<std::uint32_t> ids;
  std::uint32_t flags = 0;  // the cgroup's attach flags for device programs
};

Query query(int cgroup_fd, const sfs::path& dir, std::uint32_t query_flags = 0) {
  std::vector<std::uint32_t> ids(16);
  for (;;) {
    bpf_attr attr{};
    attr.query.target_fd = static_cast<std::uint32_t>(cgroup_fd);
    attr.query.query_flags = query_flags;
    attr.query.attach_type = BPF_CGROUP_DEVICE;
    attr.query.prog_ids = reinterpret_cast<std::uintptr_t>(ids.data());
    attr.query.prog_cnt = static_cast<std::uint32_t>(ids.size());
    if (bpf(BPF_PROG_QUERY, attr) == 0) {
      ids.resize(attr.query.prog_cnt);
      return {ids, attr.query.attach_flags};
    }
    if (errno != ENOSPC || attr.query.prog_cnt <= ids.size())
      throw_errno("query the device programs of cgroup `" + dir.string() + "`");
    ids.resize(attr.query.prog_cnt);
  }
}

// open_program opens a loaded program by id; of_what follows the id in the
// error ("of cgroup `…`").
fs::Fd open_program(std::uint32_t id, const std::string& of_what = "") {
  bpf_attr attr{};
  attr.prog_id = id;
  long fd = bpf(BPF_PROG_GET_FD_BY_ID, attr);
  if (fd < 0) throw_errno("open device program " + std::to_string(id) + of_what);
  return fs::Fd(static_cast<int>(fd));
}

// read_info fills info (whose pointers and lengths ask for what to copy).
void read_info(int prog_fd, bpf_prog_info& info, const std::string& what) {
  bpf_attr a{};
  a.info.bpf_fd = static_cast<std::uint32_t>(prog_fd);
  a.info.info_len = sizeof info;
  a.info.info = reinterpret_cast<std::uintptr_t>(&info);
  if (bpf(BPF_OBJ_GET_INFO_BY_FD, a) != 0) throw_errno("read " + what);
}

std::uint32_t id_of(int prog_fd) {
  bpf_prog_info info{};
  read_info(prog_fd, info, "the id of a device program");
  return info.id;
}

std::string ids_text(const std::vector<std::uint32_t>& ids) {
  std::string out;
  for (auto id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out.empty() ? "none" : out;
}

// load loads a device program; on failure the verifier's log is in the
// error (asked for only then, as loading with a log costs a retry).
fs::Fd load(const std::vector<bpf_insn>& prog, const std::string& for_what) {
  // The program calls no helper, so the licence need not be GPL; runc's is "Apache".
  static char license[] = "Apache-2.0";
  auto attempt = [&](char* log, std::uint32_t log_size) {
    bpf_attr attr{};
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = reinterpret_cast<std::uintptr_t>(prog.data());
    attr.insn_cnt = static_cast<std::uint32_t>(prog.size());
    attr.license = reinterpret_cast<std::uintptr_t>(license);
    std::strncpy(attr.prog_name, "specshim_dev", sizeof attr.prog_name - 1);
    if (log) {
      attr.log_level = 1;
      attr.log_buf = reinterpret_cast<std::uintptr_t>(log);
      attr.log_size = log_size;
    }
    return bpf(BPF_PROG_LOAD, attr);
  };
  long fd = attempt(nullptr, 0);
  if (fd >= 0) return fs::Fd(static_cast<int>(fd));
  int err = errno;
  std::string what = "load a device program" + for_what + " (" + std::to_string(prog.size()) + " instructions)";
  std::vector<char> log(1 << 16);
  fd = attempt(log.data(), static_cast<std::uint32_t>(log.size()));
  if (fd >= 0) return fs::Fd(static_cast<int>(fd));  // a retry that worked: nothing to report
  std::string text(log.data(), ::strnlen(log.data(), log.size()));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.pop_back();
  if (text.size() > 2000) text = "..." + text.substr(text.size() - 2000);
  for (auto& c : text)
    if (c == '\n') c = ';';
  throw Error(what + ": " + std::strerror(err) + (text.empty() ? "" : ": verifier: " + text));
}

// attach puts prog on the cgroup: replacing old when given (in the cgroup's
// multi mode with BPF_F_REPLACE, else the kernel replaces the single
// program itself), or adding it with BPF_F_ALLOW_MULTI, as runc does.
void attach(int cgroup_fd, int prog, int old, std::uint32_t flags, const std::string& what) {
  bpf_attr attr{};
  attr.target_fd = static_cast<std::uint32_t>(cgroup_fd);
  attr.attach_bpf_fd = static_cast<std::uint32_t>(prog);
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = flags;
  if (old >= 0 && (flags & BPF_F_ALLOW_MULTI)) {
    attr.attach_flags |= BPF_F_REPLACE;
    attr.replace_bpf_fd = static_cast<std::uint32_t>(old);
  }
  if (bpf(BPF_PROG_ATTACH, attr) != 0) throw_errno(what);
}

void detach(int cgroup_fd, int prog, const std::string& what) {
  bpf_attr attr{};
  attr.target_fd = static_cast<std::uint32_t>(cgroup_fd);
  attr.attach_bpf_fd = static_cast<std::uint32_t>(prog);
  attr.attach_type = BPF_CGROUP_DEVICE;
  if (bpf(BPF_PROG_DETACH, attr) != 0) throw_errno(what);
}

// Replaced is what an Undo of replace_device_program needs: the cgroup and
// both programs stay open until the Undo goes away.
struct Replaced {
  sfs::path dir;
  fs::Fd cgroup;
  fs::Fd old_prog;  // none when no program was attached
  fs::Fd new_prog;
  std::uint32_t flags = 0;

  void undo() const {
    std::string where = " of cgroup `" + dir.string() + "`";
    if (old_prog)
      attach(cgroup.get(), old_prog.get(), new_prog.get(), flags, "put the previous device program back" + where);
    else
      detach(cgroup.get(), new_prog.get(), "detach the new device program" + where);
  }
};

}  // namespace

bool MountEntry::has_option(std::string_view option) const {
  return live::has_option(super_options, option);
}

std::vector<MountEntry> parse_mountinfo(std::string_view mountinfo) {
  std::vector<MountEntry> out;
  std::istringstream lines{std::string(mountinfo)};
  for (std::string line; std::getline(lines, line);) {
    // id parent dev root point options [optional...] - fstype source super-options
    std::istringstream f(line);
    std::string id, parent, dev, root, point, options, word, source;
    if (!(f >> id >> parent >> dev >> root >> point >> options)) continue;
    while (f >> word && word != "-") {
    }
    MountEntry m{unescape(root), unescape(point), "", "", options};
    if (f >> m.fstype >> source >> m.super_options) out.push_back(std::move(m));
  }
  return out;
}

CgroupPlaces parse_cgroup_places(std::string_view proc_cgroup, std::string_view mountinfo) {
  std::optional<std::string> devices_path, unified_path, systemd_path;
  std::istringstream lines{std::string(proc_cgroup)};
  for (std::string line; std::getline(lines, line);) {
    // hierarchy-ID:controller-list:cgroup-path (the path may hold ':').
    auto a = line.find(':');
    auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (id == "0" && controllers.empty()) unified_path = path;
    if (has_option(controllers, "devices")) devices_path = path;
    if (has_option(controllers, "name=systemd")) systemd_path = path;
  }
  CgroupPlaces places;
  for (const auto& m : parse_mountinfo(mountinfo)) {
    if (m.fstype == "cgroup2" && unified_path && !places.unified) places.unified = under(m, *unified_path);
    if (m.fstype == "cgroup" && m.has_option("devices") && devices_path && !places.v1_devices)
      places.v1_devices = under(m, *devices_path);
  }
  for (const auto* path : {&unified_path, &devices_path, &systemd_path})
    if (places.systemd_unit.empty() && *path) places.systemd_unit = unit_in(**path);
  return places;
}

CgroupPlaces cgroup_places(pid_t pid) {
  std::string proc = "/proc/" + std::to_string(pid) + "/cgroup";
  std::string cgroups, mountinfo;
  try {
    cgroups = fs::read_regular_file(proc, 1 << 20);
    mountinfo = fs::read_regular_file("/proc/self/mountinfo", 16 << 20);
  } catch (const Error&) {
    std::throw_with_nested(Error("find the cgroups of process " + std::to_string(pid)));
  }
  return parse_cgroup_places(cgroups, mountinfo);
}

void v1_write(const sfs::path& devices_dir, const DeviceRule& rule) {
  sfs::path file = devices_dir / (rule.allow ? "devices.allow" : "devices.deny");
  std::string text = str(rule);
  int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw_errno("open `" + file.string() + "` to write `" + text + "`");
  fs::Fd owned(fd);
  ssize_t n = ::write(fd, text.data(), text.size());
  if (n < 0) throw_errno("write `" + text + "` to `" + file.string() + "`");
  if (static_cast<std::size_t>(n) != text.size())
    throw Error("write `" + text + "` to `" + file.string() + "`: short write");
}

std::vector<std::uint32_t> attached_device_programs(const sfs::path& cgroup_dir) {
  fs::Fd fd = open_cgroup(cgroup_dir);
  return query(fd.get(), cgroup_dir).ids;
}

std::vector<std::uint32_t> effective_device_programs(const sfs::path& cgroup_dir) {
  fs::Fd fd = open_cgroup(cgroup_dir);
  return query(fd.get(), cgroup_dir, BPF_F_QUERY_EFFECTIVE).ids;
}

std::vector<bpf_insn> device_program_instructions(std::uint32_t id) {
  std::string what = "device program " + std::to_string(id);
  fs::Fd prog = open_program(id);
  auto info_of = [&](bpf_prog_info& info) { read_info(prog.get(), info, what); };
  bpf_prog_info info{};
  info_of(info);
  if (info.xlated_prog_len == 0) throw Error(what + ": the kernel shows no instructions (kernel.kptr_restrict?)");
  std::vector<bpf_insn> insns(info.xlated_prog_len / sizeof(bpf_insn));
  std::uint32_t len = info.xlated_prog_len;
  info = bpf_prog_info{};
  info.xlated_prog_len = len;
  info.xlated_prog_insns = reinterpret_cast<std::uintptr_t>(insns.data());
  info_of(info);
  if (info.xlated_prog_len != len) throw Error(what + ": its instructions changed while read");
  return insns;
}

std::string device_program_name(std::uint32_t id) {
  bpf_prog_info info{};
  read_info(open_program(id).get(), info, "device program " + std::to_string(id));
  return std::string(info.name, ::strnlen(info.name, sizeof info.name));
}

Undo replace_device_program(const sfs::path& cgroup_dir, const std::vector<DeviceRule>& rules, bool leave_systemd) {
  std::vector<bpf_insn> prog = compile_program(rules);  // a refused list changes nothing
  auto r = std::make_shared<Replaced>();
  r->dir = cgroup_dir;
  r->cgroup = open_cgroup(cgroup_dir);
  // ours: the attached programs this call may replace (all but systemd's
  // when it leaves those to systemd). A program that went away meanwhile
  // (systemd rebuilding its own) is not counted.
  auto ours = [&](const Query& q) {
    if (!leave_systemd) return q.ids;
    std::vector<std::uint32_t> out;
    for (auto id : q.ids) {
      std::string name;
      try {
        name = device_program_name(id);
      } catch (const Error&) {
        continue;
      }
      if (name != kSystemdDeviceProgram) out.push_back(id);
    }
    return out;
  };
  Query before = query(r->cgroup.get(), cgroup_dir);
  std::string where = "cgroup `" + cgroup_dir.string() + "`";
  const bool any_attached = !before.ids.empty();
  before.ids = ours(before);
  if (any_attached && before.ids.empty()) return [] {};  // systemd's alone: DeviceAllow= rebuilds it
  if (before.ids.size() > 1)
    throw Error(where + " has " + std::to_string(before.ids.size()) + " device programs attached (ids " +
                ids_text(before.ids) + (leave_systemd ? ", besides systemd's" : "") +
                "): not replacing one of them, the others would still deny");
  if (!before.ids.empty()) {
    r->old_prog = open_program(before.ids[0], " of " + where);
    r->flags = before.flags;
  } else {
    r->flags = BPF_F_ALLOW_MULTI;
  }
  r->new_prog = load(prog, " for " + where);
  std::uint32_t new_id = id_of(r->new_prog.get());
  attach(r->cgroup.get(), r->new_prog.get(), r->old_prog ? r->old_prog.get() : -1, r->flags,
         std::string(r->old_prog ? "replace device program " + std::to_string(before.ids[0]) : "attach") +
             " with a new device program on " + where);
  Query after;
  try {
    after = query(r->cgroup.get(), cgroup_dir);
    after.ids = ours(after);
  } catch (const Error&) {
    r->undo();
    throw;
  }
  if (after.ids != std::vector<std::uint32_t>{new_id}) {
    r->undo();
    throw Error(where + ": after attaching device program " + std::to_string(new_id) + ", attached are " +
                ids_text(after.ids) + " (another writer at the same time?); put back what was there");
  }
  return [r] { r->undo(); };
}

std::string device_program_loads() {
  try {
    load(compile_program(runc_default_rules()), "");
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace specshim::live
