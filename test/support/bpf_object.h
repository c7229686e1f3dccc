// SPDX-License-Identifier: Apache-2.0
// A clang-built BPF object's cgroup device program, loaded, pinned and
// attached to a cgroup2 directory by bpftool, the way an operator (or runc)
// would have put it there: independent of specshim's own BPF code. For the
// real-kernel tests of program replacement (test/bpf/*.bpf.c).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace specshim::test {

// deny_1_11_object is test/bpf/deny_1_11.bpf.o: denies char 1:11, allows
// everything else.
std::filesystem::path deny_1_11_object();
// sd_devices_object is test/bpf/sd_devices.bpf.o: allows everything, under
// the name systemd gives its program (live::kSystemdDeviceProgram).
std::filesystem::path sd_devices_object();

// ensure_bpffs mounts bpffs on /sys/fs/bpf unless it is there already (it
// stays mounted: other tests may pin there at the same time).
void ensure_bpffs();

// AttachedBpfObject runs `bpftool prog load OBJECT PIN type cgroup/dev` and
// `bpftool cgroup attach CGROUP device pinned PIN multi` (without `multi`
// when multi is false: the cgroup's single-program mode). The destructor
// detaches the program if it is still attached there (after a replacement
// it is not) and removes the pin. Fails the test (REQUIRE) when bpftool does.
class AttachedBpfObject {
 public:
  AttachedBpfObject(const std::filesystem::path& cgroup_dir, const std::filesystem::path& object, bool multi = true);
  ~AttachedBpfObject();
  AttachedBpfObject(const AttachedBpfObject&) = delete;
  AttachedBpfObject& operator=(const AttachedBpfObject&) = delete;

  std::uint32_t id() const { return id_; }  // the kernel's program id
  const std::filesystem::path& pin() const { return pin_; }
  // attached reports whether the program is attached to the cgroup (bpftool cgroup show).
  bool attached() const;
  // detach detaches it now (bpftool cgroup detach); false when bpftool fails.
  bool detach();

 private:
  std::filesystem::path cgroup_;
  std::filesystem::path pin_;
  std::uint32_t id_ = 0;
};

}  // namespace specshim::test
