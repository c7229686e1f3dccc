// SPDX-License-Identifier: Apache-2.0
// Doctor's kernel check: openat2, and which cgroup version confines devices.
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "doctor/doctor.h"
#include "specshim/base/fs.h"
#include "specshim/live/cgroup_devices.h"

namespace specshim::shim::doctor {
namespace {

void check_openat2(Check& c) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how);
  if (fd >= 0) {
    ::close(static_cast<int>(fd));
    c.add(Severity::ok, "openat2 with RESOLVE_IN_ROOT: available");
  } else {
    c.add(Severity::warn, std::string("openat2: ") + std::strerror(errno) +
                              " (kernel before 5.6?): paths inside the rootfs are resolved without it");
  }
}

// bpf_device_filter loads (and drops) the smallest cgroup device program,
// "allow everything", the way runc attaches its device filter on cgroup v2.
std::string bpf_device_filter() {
  bpf_insn prog[2] = {};
  prog[0].code = BPF_ALU64 | BPF_MOV | BPF_K;  // r0 = 1
  prog[0].dst_reg = BPF_REG_0;
  prog[0].imm = 1;
  prog[1].code = BPF_JMP | BPF_EXIT;
  static char license[] = "Apache-2.0";
  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<std::uintptr_t>(prog);
  attr.insn_cnt = 2;
  attr.license = reinterpret_cast<std::uintptr_t>(license);
  long fd = ::syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr);
  if (fd < 0) return std::strerror(errno);
  ::close(static_cast<int>(fd));
  return {};
}

void check_cgroups(const Host& host, Check& c) {
  std::filesystem::path mountinfo = host.path("/proc/self/mountinfo");
  std::vector<live::MountEntry> all;
  try {
    all = live::parse_mountinfo(fs::read_regular_file(mountinfo, 4 << 20));
  } catch (const std::exception& e) {
    c.add(Severity::warn, "cannot read " + mountinfo.string() + ": " + e.what());
    return;
  }
  const live::MountEntry *unified = nullptr, *devices = nullptr;
  bool v1 = false;
  for (const auto& m : all) {
    if (m.fstype == "cgroup2") unified = &m;
    if (m.fstype != "cgroup") continue;
    v1 = true;
    if (m.has_option("devices")) devices = &m;
  }
  if (unified && !v1 && unified->point == "/sys/fs/cgroup") {
    c.add(Severity::ok, "cgroup v2 (unified) at " + unified->point);
    std::string why = bpf_device_filter();
    c.add(why.empty() ? Severity::ok : Severity::fail,
          why.empty() ? "BPF device filter: loads" : "BPF device filter: cannot load a cgroup device program: " + why);
    return;
  }
  if (!v1) {
    c.add(Severity::fail, "no cgroup v1 hierarchy and no cgroup v2 at /sys/fs/cgroup: devices cannot be confined");
    return;
  }
  c.add(Severity::ok, unified ? "cgroup v1 (hybrid, cgroup2 at " + unified->point + ")" : std::string("cgroup v1"));
  if (devices)
    c.add(Severity::ok, "devices controller at " + devices->point);
  else
    c.add(Severity::fail, "cgroup v1 without the devices controller: device access cannot be confined");
}

}  // namespace

Check check_kernel(const Host& host) {
  Check c("kernel");
  check_openat2(c);
  check_cgroups(host, c);
  return c;
}

}  // namespace specshim::shim::doctor
