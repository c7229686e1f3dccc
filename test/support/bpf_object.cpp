// SPDX-License-Identifier: Apache-2.0
#include "bpf_object.h"

#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "container.h"

namespace specshim::test {
namespace {

ProcessResult bpftool(std::vector<std::string> args) {
  args.insert(args.begin(), SPECSHIM_BPFTOOL);
  return run_process(args, {}, 30000);
}

}  // namespace

std::filesystem::path deny_1_11_object() {
  return SPECSHIM_DENY_1_11_BPF;
}

std::filesystem::path sd_devices_object() {
  return SPECSHIM_SD_DEVICES_BPF;
}

void ensure_bpffs() {
  struct statfs st {};
  if (::statfs("/sys/fs/bpf", &st) == 0 && st.f_type == BPF_FS_MAGIC) return;
  std::filesystem::create_directories("/sys/fs/bpf");
  // Another test may have mounted it between the check and here: EBUSY is fine then.
  if (::mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700") != 0)
    REQUIRE((::statfs("/sys/fs/bpf", &st) == 0 && st.f_type == BPF_FS_MAGIC));
}

AttachedBpfObject::AttachedBpfObject(const std::filesystem::path& cgroup_dir, const std::filesystem::path& object,
                                     bool multi)
    : cgroup_(cgroup_dir) {
  ensure_bpffs();
  static std::atomic<int> n{0};
  pin_ = "/sys/fs/bpf/specshim-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  auto load = bpftool({"prog", "load", object.string(), pin_.string(), "type", "cgroup/dev"});
  INFO("bpftool prog load: " << load.out << load.err);
  REQUIRE(load.exit_code == 0);
  auto show = bpftool({"-j", "prog", "show", "pinned", pin_.string()});
  INFO("bpftool prog show: " << show.out << show.err);
  REQUIRE(show.exit_code == 0);
  id_ = nlohmann::json::parse(show.out).at("id").get<std::uint32_t>();
  std::vector<std::string> args = {"cgroup", "attach", cgroup_.string(), "device", "pinned", pin_.string()};
  if (multi) args.push_back("multi");
  auto attach = bpftool(args);
  INFO("bpftool cgroup attach: " << attach.out << attach.err);
  if (attach.exit_code != 0) ::unlink(pin_.c_str());
  REQUIRE(attach.exit_code == 0);
}

AttachedBpfObject::~AttachedBpfObject() {
  detach();  // fails when a replacement took it off already
  ::unlink(pin_.c_str());
}

bool AttachedBpfObject::attached() const {
  auto show = bpftool({"-j", "cgroup", "show", cgroup_.string()});
  if (show.exit_code != 0 || show.out.empty()) return false;
  for (const auto& p : nlohmann::json::parse(show.out, nullptr, false))
    if (p.is_object() && p.value("id", 0u) == id_ &&
        (p.value("attach_type", "") == "device" || p.value("attach_type", "") == "cgroup_device"))
      return true;  // bpftool 7 says cgroup_device, older ones device
  return false;
}

bool AttachedBpfObject::detach() {
  return bpftool({"cgroup", "detach", cgroup_.string(), "device", "pinned", pin_.string()}).exit_code == 0;
}

}  // namespace specshim::test
