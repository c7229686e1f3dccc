// SPDX-License-Identifier: Apache-2.0
// live::run_device_program on hand-assembled programs: what clang and runc
// emit (context loads, masks, 32- and 64-bit jumps, stack spills, 64-bit
// immediates), and every instruction it refuses to guess about, each named.
#include <catch2/catch.hpp>

#include "specshim/live/device_rules.h"

using namespace specshim::live;
using Catch::Contains;

namespace {

bpf_insn insn(std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off, std::int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst;
  i.src_reg = src;
  i.off = off;
  i.imm = imm;
  return i;
}
bpf_insn ldx_w(std::uint8_t dst, std::uint8_t src, std::int16_t off) {
  return insn(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0);
}
bpf_insn mov(std::uint8_t dst, std::int32_t imm) {
  return insn(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm);
}
bpf_insn exit_insn() {
  return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

// deny_1_11 is what clang makes of test/bpf/deny_1_11.bpf.c: deny char 1:11, allow the rest.
const std::vector<bpf_insn> kDeny111 = {
    ldx_w(2, 1, 0),                                    // access_type
    insn(BPF_ALU | BPF_AND | BPF_K, 2, 0, 0, 0xffff),  // the device type
    insn(BPF_JMP32 | BPF_JNE | BPF_K, 2, 0, 6, BPF_DEVCG_DEV_CHAR),
    ldx_w(2, 1, 4),
    insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, 4, 1),
    ldx_w(2, 1, 8),
    insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, 2, 11),
    mov(0, 0),
    exit_insn(),
    mov(0, 1),
    exit_insn(),
};

std::string error_of(const std::vector<bpf_insn>& prog) {
  ProgramRun run = run_device_program(prog, 'c', 1, 3, "rw");
  CHECK_FALSE(run.allow);
  return run.error;
}

}  // namespace

TEST_CASE("device program: a clang-built filter decides by type, major and minor") {
  CHECK(run_device_program(kDeny111, 'c', 1, 11, "rw").allow == false);
  CHECK(run_device_program(kDeny111, 'c', 1, 11, "r").allow == false);
  CHECK(run_device_program(kDeny111, 'c', 1, 3, "rw").allow == true);
  CHECK(run_device_program(kDeny111, 'b', 1, 11, "rw").allow == true);
  CHECK(run_device_program(kDeny111, 'c', 2, 11, "rw").allow == true);
}

TEST_CASE("device program: the access letters arrive together, as open(O_RDWR) asks") {
  // Deny any request holding write: r0 = !(access_type >> 16 & BPF_DEVCG_ACC_WRITE).
  std::vector<bpf_insn> prog = {
      ldx_w(2, 1, 0),
      insn(BPF_ALU | BPF_RSH | BPF_K, 2, 0, 0, 16),
      insn(BPF_JMP | BPF_JSET | BPF_K, 2, 0, 2, BPF_DEVCG_ACC_WRITE),
      mov(0, 1),
      exit_insn(),
      mov(0, 0),
      exit_insn(),
  };
  CHECK(run_device_program(prog, 'c', 1, 11, "r").allow == true);
  CHECK(run_device_program(prog, 'c', 1, 11, "m").allow == true);
  CHECK(run_device_program(prog, 'c', 1, 11, "w").allow == false);
  CHECK(run_device_program(prog, 'c', 1, 11, "rw").allow == false);
}

TEST_CASE("device program: stack spills of numbers and of the context pointer read back") {
  std::vector<bpf_insn> prog = {
      insn(BPF_STX | BPF_MEM | BPF_DW, 10, 1, -16, 0),  // spill r1 (the context)
      mov(1, 0),                                        // clobber it
  };
  prog.push_back(insn(BPF_LDX | BPF_MEM | BPF_DW, 4, 10, -16, 0));  // r4 = the context again
  prog.push_back(ldx_w(2, 4, 8));                                   // minor
  prog.push_back(insn(BPF_STX | BPF_MEM | BPF_W, 10, 2, -4, 0));    // spill a 32-bit number
  prog.push_back(insn(BPF_ALU64 | BPF_MOV | BPF_X, 5, 10, 0, 0));   // r5 = r10
  prog.push_back(insn(BPF_ALU64 | BPF_ADD | BPF_K, 5, 0, 0, -4));   // r5 -= 4
  prog.push_back(ldx_w(0, 5, 0));                                   // r0 = minor, through r5
  prog.push_back(insn(BPF_ALU | BPF_AND | BPF_K, 0, 0, 0, 1));      // odd minors allowed
  prog.push_back(exit_insn());
  CHECK(run_device_program(prog, 'c', 1, 11, "rw").allow == true);
  CHECK(run_device_program(prog, 'c', 1, 10, "rw").allow == false);
}

TEST_CASE("device program: 64-bit immediates, 32-bit jumps see the low half, signed compares") {
  std::vector<bpf_insn> prog = {
      insn(BPF_LD | BPF_IMM | BPF_DW, 2, 0, 0, 7),
      insn(0, 0, 0, 0, 1),                            // r2 = 0x1'00000007
      ldx_w(3, 1, 8),                                 // minor
      insn(BPF_JMP32 | BPF_JEQ | BPF_X, 3, 2, 1, 0),  // low halves equal: 7
      insn(BPF_JMP | BPF_JA, 0, 0, 3, 0),             // else deny
      insn(BPF_JMP | BPF_JEQ | BPF_X, 3, 2, 2, 0),    // 64-bit: never equal
      mov(0, 1),
      exit_insn(),
      mov(0, 0),
      exit_insn(),
  };
  CHECK(run_device_program(prog, 'c', 1, 7, "r").allow == true);
  CHECK(run_device_program(prog, 'c', 1, 8, "r").allow == false);
  std::vector<bpf_insn> sign = {
      ldx_w(2, 1, 4), insn(BPF_JMP32 | BPF_JSLT | BPF_K, 2, 0, 2, 0),  // a major >= 2^31 is negative as s32
      mov(0, 1),      exit_insn(),
      mov(0, 0),      exit_insn(),
  };
  CHECK(run_device_program(sign, 'c', 0x80000000LL, 0, "r").allow == false);
  CHECK(run_device_program(sign, 'c', 0x7fffffffLL, 0, "r").allow == true);
}

TEST_CASE("device program: what it cannot run is named, never guessed") {
  CHECK_THAT(error_of({insn(BPF_JMP | BPF_CALL, 0, 0, 0, 14), mov(0, 1), exit_insn()}),
             Contains("calls a kernel helper"));
  CHECK_THAT(error_of({exit_insn()}), Contains("r0 is unset"));
  CHECK_THAT(error_of({insn(BPF_LD | BPF_IMM | BPF_DW, 2, BPF_PSEUDO_MAP_FD, 0, 3), insn(0, 0, 0, 0, 0), mov(0, 1),
                       exit_insn()}),
             Contains("map"));
  CHECK_THAT(error_of({insn(BPF_JMP | BPF_JA, 0, 0, 5, 0), exit_insn()}), Contains("jumps out of the program"));
  CHECK_THAT(error_of({mov(0, 2), exit_insn()}), Contains("returns 2"));
  CHECK_THAT(error_of({insn(BPF_JMP | BPF_JA, 0, 0, -1, 0)}), Contains("no exit"));
  CHECK_THAT(error_of({insn(BPF_STX | BPF_MEM | BPF_W, 1, 1, 0, 0), mov(0, 1), exit_insn()}),
             Contains("stores outside the stack"));
  CHECK_THAT(error_of({insn(BPF_LDX | BPF_MEM | BPF_W, 0, 10, -4, 0), exit_insn()}), Contains("unset stack byte"));
  CHECK_THAT(error_of({ldx_w(0, 1, 12), exit_insn()}), Contains("out of bounds"));
  CHECK_THAT(error_of({insn(BPF_ALU64 | BPF_MUL | BPF_K, 1, 0, 0, 2), mov(0, 1), exit_insn()}),
             Contains("arithmetic on a pointer"));
  CHECK_THAT(error_of({mov(0, 1)}), Contains("runs past the end"));
}
