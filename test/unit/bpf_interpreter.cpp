// SPDX-License-Identifier: Apache-2.0
#include "bpf_interpreter.h"

#include <array>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

namespace specshim::test {

std::uint64_t run_device_program(const std::vector<bpf_insn>& prog, const bpf_cgroup_dev_ctx& ctx) {
  // r1 holds the context pointer: only loads through it are allowed, so it
  // is modelled as a tag until an instruction overwrites it.
  std::array<std::optional<std::uint64_t>, 11> reg{};
  bool r1_is_ctx = true;
  auto get = [&](int r, std::size_t pc) {
    if (r == BPF_REG_1 && r1_is_ctx) throw std::runtime_error("insn " + std::to_string(pc) + ": r1 is the context");
    if (!reg[r]) throw std::runtime_error("insn " + std::to_string(pc) + ": r" + std::to_string(r) + " unset");
    return *reg[r];
  };
  auto set = [&](int r, std::uint64_t v) {
    reg[r] = v;
    if (r == BPF_REG_1) r1_is_ctx = false;
  };
  std::size_t pc = 0;
  for (std::size_t steps = 0; steps < 100000; ++steps) {
    if (pc >= prog.size()) throw std::runtime_error("pc " + std::to_string(pc) + " beyond the program");
    const bpf_insn& i = prog[pc];
    auto jump_to = [&](bool taken) {
      std::int64_t next = static_cast<std::int64_t>(pc) + 1 + (taken ? i.off : 0);
      if (next < 0 || next > static_cast<std::int64_t>(prog.size()))
        throw std::runtime_error("insn " + std::to_string(pc) + ": jump out of the program");
      pc = static_cast<std::size_t>(next);
    };
    std::uint32_t imm = static_cast<std::uint32_t>(i.imm);
    switch (i.code) {
      case BPF_LDX | BPF_MEM | BPF_W: {
        if (i.src_reg != BPF_REG_1 || !r1_is_ctx || i.off < 0 || i.off % 4 || i.off + 4 > int(sizeof ctx))
          throw std::runtime_error("insn " + std::to_string(pc) + ": load not from the context");
        std::uint32_t v;
        std::memcpy(&v, reinterpret_cast<const char*>(&ctx) + i.off, 4);
        set(i.dst_reg, v);
        ++pc;
        break;
      }
      case BPF_ALU | BPF_AND | BPF_K:
        set(i.dst_reg, static_cast<std::uint32_t>(get(i.dst_reg, pc)) & imm);
        ++pc;
        break;
      case BPF_ALU | BPF_RSH | BPF_K:
        if (imm >= 32) throw std::runtime_error("insn " + std::to_string(pc) + ": shift by " + std::to_string(imm));
        set(i.dst_reg, static_cast<std::uint32_t>(get(i.dst_reg, pc)) >> imm);
        ++pc;
        break;
      case BPF_ALU | BPF_MOV | BPF_K:
        set(i.dst_reg, imm);
        ++pc;
        break;
      case BPF_ALU | BPF_MOV | BPF_X:
        set(i.dst_reg, static_cast<std::uint32_t>(get(i.src_reg, pc)));
        ++pc;
        break;
      case BPF_JMP32 | BPF_JNE | BPF_K:
        jump_to(static_cast<std::uint32_t>(get(i.dst_reg, pc)) != imm);
        break;
      case BPF_JMP32 | BPF_JEQ | BPF_K:
        jump_to(static_cast<std::uint32_t>(get(i.dst_reg, pc)) == imm);
        break;
      case BPF_JMP | BPF_EXIT:
        return get(BPF_REG_0, pc);
      default:
        throw std::runtime_error("insn " + std::to_string(pc) + ": opcode " + std::to_string(i.code) +
                                 " is not in the compiler's subset");
    }
  }
  throw std::runtime_error("no exit after 100000 steps");
}

}  // namespace specshim::test
