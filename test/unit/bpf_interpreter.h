// SPDX-License-Identifier: Apache-2.0
// A tiny interpreter of exactly the BPF instructions live::compile_program
// emits, so unit tests can run a device program without the kernel. Any
// other instruction, a jump out of the program, a read of an unset register
// or a run without an exit is an error (thrown), not a decision.
#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <vector>

namespace specshim::test {

// run_device_program runs prog on a bpf_cgroup_dev_ctx and returns r0.
std::uint64_t run_device_program(const std::vector<bpf_insn>& prog, const bpf_cgroup_dev_ctx& ctx);

}  // namespace specshim::test
