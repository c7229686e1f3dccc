// SPDX-License-Identifier: Apache-2.0
// Fuzzes live::run_device_program, which diagnose runs on whatever device
// programs another agent attached to a container's cgroup, two ways. The
// first byte picks:
// - even: the rest is raw instructions (8 bytes each) run on a request taken
//   from their last bytes: any program must end in a decision or a named
//   refusal, never a crash, a hang or undefined behaviour;
// - odd: the rest is a rule list (4 bytes a rule), compiled by
//   compile_program and run on a grid of requests, each of whose single-letter
//   decisions must equal reference_decision's.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/live/device_rules.h"

using namespace specshim::live;

namespace {

const char* kAccess[] = {"r", "w", "m", "rw", "rwm", "wm", "rm"};

void raw(const std::uint8_t* data, std::size_t size) {
  std::vector<bpf_insn> prog(size / sizeof(bpf_insn));
  if (!prog.empty()) std::memcpy(prog.data(), data, prog.size() * sizeof(bpf_insn));
  std::uint8_t tail = size ? data[size - 1] : 0;
  ProgramRun run = run_device_program(prog, tail & 1 ? 'b' : 'c', tail >> 4, tail & 0xf, kAccess[tail % 7]);
  if (run.allow.has_value() == !run.error.empty()) std::abort();  // exactly one of decision and reason
}

void rules(const std::uint8_t* data, std::size_t size) {
  const std::int64_t numbers[] = {0, 1, 3, 11, 136, 0xffffffffLL};
  std::vector<DeviceRule> list;
  for (std::size_t i = 0; i + 4 <= size && list.size() < 32; i += 4) {
    DeviceRule r;
    r.allow = data[i] & 1;
    r.type = "acb"[(data[i] >> 1) % 3];
    if (data[i + 1] < 200) r.major = numbers[data[i + 1] % 6];
    if (data[i + 2] < 200) r.minor = numbers[data[i + 2] % 6];
    r.access = kAccess[data[i + 3] % 7];
    list.push_back(r);
  }
  std::vector<bpf_insn> prog;
  try {
    prog = compile_program(list);
  } catch (const specshim::Error&) {
    return;  // refused as runc refuses it
  }
  for (char type : {'c', 'b'})
    for (auto major : numbers)
      for (auto minor : numbers)
        for (char a : {'r', 'w', 'm'}) {
          ProgramRun run = run_device_program(prog, type, major, minor, std::string(1, a));
          if (!run.allow || *run.allow != reference_decision(list, {type, major, minor, a})) std::abort();
        }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1)
    rules(data + 1, size - 1);
  else
    raw(data + 1, size - 1);
  return 0;
}
