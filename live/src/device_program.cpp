// SPDX-License-Identifier: Apache-2.0
// Running a cgroup device program in user space, on one request, as the
// kernel runs it: diagnose asks what the programs attached to a container's
// cgroup decide, rather than what they were meant to decide.
#include <array>
#include <cstring>

#include "specshim/live/device_rules.h"

namespace specshim::live {
namespace {

// Value is a register or stack slot: unset, a number, or a pointer (an
// offset into the context or the stack).
struct Value {
  enum class Kind { unset, scalar, ctx, stack } kind = Kind::unset;
  std::uint64_t v = 0;
};

constexpr std::size_t kStack = 512;  // MAX_BPF_STACK
constexpr std::size_t kSteps = 1'000'000;

struct Stop {
  std::string why;
};

class Machine {
 public:
  Machine(const std::vector<bpf_insn>& prog, const bpf_cgroup_dev_ctx& ctx) : prog_(prog) {
    std::memcpy(ctx_.data(), &ctx, sizeof ctx);
    reg_[BPF_REG_1] = {Value::Kind::ctx, 0};
    reg_[BPF_REG_10] = {Value::Kind::stack, kStack};
  }

  std::uint64_t run() {
    for (std::size_t steps = 0; steps < kSteps; ++steps) {
      if (pc_ >= prog_.size()) stop("runs past the end of the program");
      const bpf_insn& i = prog_[pc_];
      switch (i.code & 0x07) {
        case BPF_LD:
          load_imm64(i);
          break;
        case BPF_LDX:
          load(i);
          break;
        case BPF_ST:
        case BPF_STX:
          store(i);
          break;
        case BPF_ALU:
        case BPF_ALU64:
          alu(i, (i.code & 0x07) == BPF_ALU64);
          break;
        case BPF_JMP:
        case BPF_JMP32:
          if (i.code == (BPF_JMP | BPF_EXIT)) return scalar(BPF_REG_0);
          jump(i, (i.code & 0x07) == BPF_JMP32);
          break;
        default:
          stop("opcode " + std::to_string(i.code));
      }
    }
    stop("no exit after " + std::to_string(kSteps) + " steps");
    return 0;
  }

 private:
  [[noreturn]] void stop(const std::string& why) const { throw Stop{"insn " + std::to_string(pc_) + ": " + why}; }

  Value& reg(int r) {
    if (r < 0 || r > BPF_REG_10) stop("register r" + std::to_string(r));
    return reg_[r];
  }
  std::uint64_t scalar(int r) {
    const Value& v = reg(r);
    if (v.kind != Value::Kind::scalar)
      stop("r" + std::to_string(r) + (v.kind == Value::Kind::unset ? " is unset" : " is a pointer"));
    return v.v;
  }
  void set(int r, std::uint64_t v) {
    if (r == BPF_REG_10) stop("writes r10");
    reg(r) = {Value::Kind::scalar, v};
  }

  static std::size_t size_of(std::uint8_t code) {
    switch (code & 0x18) {
      case BPF_B:
        return 1;
      case BPF_H:
        return 2;
      case BPF_W:
        return 4;
      default:
        return 8;
    }
  }

  // address checks a memory access through base + off and returns the byte offset in its area.
  std::size_t address(const Value& base, std::int16_t off, std::size_t size, std::size_t area) {
    std::int64_t at = static_cast<std::int64_t>(base.v) + off;
    if (at < 0 || static_cast<std::size_t>(at) + size > area) stop("memory access out of bounds");
    return static_cast<std::size_t>(at);
  }

  void load_imm64(const bpf_insn& i) {
    if (i.code != (BPF_LD | BPF_IMM | BPF_DW) || i.src_reg != 0)
      stop(i.src_reg ? "loads a map or object reference" : "legacy packet load");
    if (pc_ + 1 >= prog_.size()) stop("64-bit immediate without its second half");
    std::uint64_t v = static_cast<std::uint32_t>(i.imm) |
                      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(prog_[pc_ + 1].imm)) << 32);
    set(i.dst_reg, v);
    pc_ += 2;
  }

  void load(const bpf_insn& i) {
    if ((i.code & 0xe0) != BPF_MEM) stop("load mode " + std::to_string(i.code & 0xe0));
    const Value& base = reg(i.src_reg);
    std::size_t size = size_of(i.code);
    std::uint64_t v = 0;
    if (base.kind == Value::Kind::ctx) {
      std::memcpy(&v, ctx_.data() + address(base, i.off, size, ctx_.size()), size);
      set(i.dst_reg, v);
    } else if (base.kind == Value::Kind::stack) {
      std::size_t at = address(base, i.off, size, kStack);
      if (size == 8 && slot_[at / 8].kind != Value::Kind::unset && at % 8 == 0) {
        if (i.dst_reg == BPF_REG_10) stop("writes r10");
        reg(i.dst_reg) = slot_[at / 8];  // a spilled register, pointers included
      } else {
        for (std::size_t b = at; b < at + size; ++b)
          if (!written_[b]) stop("reads an unset stack byte");
        std::memcpy(&v, stack_.data() + at, size);
        set(i.dst_reg, v);
      }
    } else {
      stop("loads through r" + std::to_string(i.src_reg) + ", which points nowhere it may read");
    }
    ++pc_;
  }

  void store(const bpf_insn& i) {
    if ((i.code & 0xe0) != BPF_MEM) stop((i.code & 0xe0) == BPF_ATOMIC ? "atomic operation" : "store mode");
    const Value& base = reg(i.dst_reg);
    if (base.kind != Value::Kind::stack) stop("stores outside the stack");
    std::size_t size = size_of(i.code);
    std::size_t at = address(base, i.off, size, kStack);
    Value v = (i.code & 0x07) == BPF_ST ? Value{Value::Kind::scalar, static_cast<std::uint64_t>(std::int64_t{i.imm})}
                                        : reg(i.src_reg);
    if (v.kind == Value::Kind::unset) stop("stores an unset register");
    slot_[at / 8] = {};
    if (v.kind != Value::Kind::scalar) {
      if (size != 8 || at % 8) stop("stores part of a pointer");
      slot_[at / 8] = v;  // a spill: read back whole
    }
    std::memcpy(stack_.data() + at, &v.v, size);
    for (std::size_t b = at; b < at + size; ++b) written_[b] = true;
    ++pc_;
  }

  void alu(const bpf_insn& i, bool wide) {
    std::uint8_t op = i.code & 0xf0;
    bool x = i.code & BPF_X;
    if (i.off != 0) stop("signed division or sign-extending move");
    Value& dst = reg(i.dst_reg);
    if (i.dst_reg == BPF_REG_10) stop("writes r10");
    // Pointer moves and offsets: r2 = r10; r2 += -8.
    if (op == BPF_MOV && x && wide && reg(i.src_reg).kind != Value::Kind::scalar) {
      if (reg(i.src_reg).kind == Value::Kind::unset) stop("r" + std::to_string(i.src_reg) + " is unset");
      dst = reg(i.src_reg);
      ++pc_;
      return;
    }
    if (op != BPF_MOV && (dst.kind == Value::Kind::ctx || dst.kind == Value::Kind::stack)) {
      if (!wide || x || (op != BPF_ADD && op != BPF_SUB)) stop("arithmetic on a pointer");
      std::int64_t k = i.imm;
      dst.v = static_cast<std::uint64_t>(static_cast<std::int64_t>(dst.v) + (op == BPF_ADD ? k : -k));
      ++pc_;
      return;
    }
    std::uint64_t src = x ? scalar(i.src_reg) : static_cast<std::uint64_t>(std::int64_t{i.imm});
    std::uint64_t a = op == BPF_MOV ? 0 : scalar(i.dst_reg);
    if (!wide) {
      a = static_cast<std::uint32_t>(a);
      src = static_cast<std::uint32_t>(src);
    }
    unsigned bits = wide ? 64 : 32;
    std::uint64_t r = 0;
    switch (op) {
      case BPF_ADD:
        r = a + src;
        break;
      case BPF_SUB:
        r = a - src;
        break;
      case BPF_MUL:
        r = a * src;
        break;
      case BPF_DIV:
        r = src ? a / src : 0;
        break;
      case BPF_MOD:
        r = src ? a % src : a;
        break;
      case BPF_OR:
        r = a | src;
        break;
      case BPF_AND:
        r = a & src;
        break;
      case BPF_XOR:
        r = a ^ src;
        break;
      case BPF_MOV:
        r = src;
        break;
      case BPF_NEG:
        r = -a;
        break;
      case BPF_LSH:
        r = a << (src & (bits - 1));
        break;
      case BPF_RSH:
        r = a >> (src & (bits - 1));
        break;
      case BPF_ARSH:
        r = wide ? static_cast<std::uint64_t>(static_cast<std::int64_t>(a) >> (src & 63))
                 : static_cast<std::uint32_t>(static_cast<std::int32_t>(a) >> (src & 31));
        break;
      default:
        stop("ALU operation " + std::to_string(op));
    }
    set(i.dst_reg, wide ? r : static_cast<std::uint32_t>(r));
    ++pc_;
  }

  void jump(const bpf_insn& i, bool narrow) {
    std::uint8_t op = i.code & 0xf0;
    if (op == BPF_CALL) stop("calls a kernel helper");  // translated: imm is the helper's address, not its id
    std::int64_t off = i.off;
    bool taken = true;
    if (op == BPF_JA) {
      if (narrow) off = i.imm;  // gotol
    } else {
      std::uint64_t a = scalar(i.dst_reg);
      std::uint64_t b = (i.code & BPF_X) ? scalar(i.src_reg) : static_cast<std::uint64_t>(std::int64_t{i.imm});
      if (narrow) {
        a = static_cast<std::uint32_t>(a);
        b = static_cast<std::uint32_t>(b);
      }
      std::int64_t sa = narrow ? std::int32_t(a) : std::int64_t(a), sb = narrow ? std::int32_t(b) : std::int64_t(b);
      switch (op) {
        case BPF_JEQ:
          taken = a == b;
          break;
        case BPF_JNE:
          taken = a != b;
          break;
        case BPF_JGT:
          taken = a > b;
          break;
        case BPF_JGE:
          taken = a >= b;
          break;
        case BPF_JLT:
          taken = a < b;
          break;
        case BPF_JLE:
          taken = a <= b;
          break;
        case BPF_JSET:
          taken = (a & b) != 0;
          break;
        case BPF_JSGT:
          taken = sa > sb;
          break;
        case BPF_JSGE:
          taken = sa >= sb;
          break;
        case BPF_JSLT:
          taken = sa < sb;
          break;
        case BPF_JSLE:
          taken = sa <= sb;
          break;
        default:
          stop("jump operation " + std::to_string(op));
      }
    }
    std::int64_t next = static_cast<std::int64_t>(pc_) + 1 + (taken ? off : 0);
    if (next < 0 || next >= static_cast<std::int64_t>(prog_.size())) stop("jumps out of the program");
    pc_ = static_cast<std::size_t>(next);
  }

  const std::vector<bpf_insn>& prog_;
  std::array<std::uint8_t, sizeof(bpf_cgroup_dev_ctx)> ctx_{};
  std::array<Value, 11> reg_{};
  std::array<std::uint8_t, kStack> stack_{};
  std::array<bool, kStack> written_{};
  std::array<Value, kStack / 8> slot_{};  // pointers spilled to 8-byte slots
  std::size_t pc_ = 0;
};

}  // namespace

ProgramRun run_device_program(const std::vector<bpf_insn>& prog, char type, std::int64_t major, std::int64_t minor,
                              std::string_view access) {
  bpf_cgroup_dev_ctx ctx{};
  std::uint32_t bits = 0;
  for (char a : access) bits |= a == 'r' ? BPF_DEVCG_ACC_READ : a == 'w' ? BPF_DEVCG_ACC_WRITE : BPF_DEVCG_ACC_MKNOD;
  ctx.access_type = (bits << 16) | (type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR);
  ctx.major = static_cast<std::uint32_t>(major);
  ctx.minor = static_cast<std::uint32_t>(minor);
  try {
    std::uint64_t r0 = Machine(prog, ctx).run();
    if (r0 > 1) return {std::nullopt, "returns " + std::to_string(r0) + ", not 0 or 1"};
    return {r0 == 1, ""};
  } catch (const Stop& s) {
    return {std::nullopt, s.why};
  }
}

}  // namespace specshim::live
