// SPDX-License-Identifier: Apache-2.0
// Device rules: runc's defaults, the rules a container was created with, the
// v1 controller's decision, and the cgroup v2 program that makes the same one.
#include "specshim/live/device_rules.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

#include "specshim/base/error.h"

namespace specshim::live {
namespace {

// Bits are an access set: BPF_DEVCG_ACC_MKNOD | _READ | _WRITE.
using Bits = std::uint32_t;
constexpr Bits kAll = BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE;

Bits bit(char c) {
  return c == 'r' ? BPF_DEVCG_ACC_READ : c == 'w' ? BPF_DEVCG_ACC_WRITE : c == 'm' ? BPF_DEVCG_ACC_MKNOD : 0;
}

Bits bits(const std::string& access) {
  Bits b = 0;
  for (char c : access) b |= bit(c);
  return b;
}

std::string access_text(Bits b) {
  std::string s;
  if (b & BPF_DEVCG_ACC_READ) s += 'r';
  if (b & BPF_DEVCG_ACC_WRITE) s += 'w';
  if (b & BPF_DEVCG_ACC_MKNOD) s += 'm';
  return s;
}

DeviceRule allow(char type, std::optional<std::int64_t> major, std::optional<std::int64_t> minor, std::string access) {
  return DeviceRule{true, type, major, minor, std::move(access)};
}

// kDefaults is runc's specconv AllowedDevices (checked against runc v1.1.5,
// v1.2.0, v1.2.4, v1.3.0 and main in 2026): the path is what a linux.devices
// entry must name for runc to drop the default.
struct Default {
  const char* path;  // "" for rules without a node
  DeviceRule rule;
};
const std::vector<Default>& defaults() {
  static const std::vector<Default> table = {
      {"", allow('c', std::nullopt, std::nullopt, "m")},
      {"", allow('b', std::nullopt, std::nullopt, "m")},
      {"/dev/null", allow('c', 1, 3, "rwm")},
      {"/dev/random", allow('c', 1, 8, "rwm")},
      {"/dev/full", allow('c', 1, 7, "rwm")},
      {"/dev/tty", allow('c', 5, 0, "rwm")},
      {"/dev/zero", allow('c', 1, 5, "rwm")},
      {"/dev/urandom", allow('c', 1, 9, "rwm")},
      {"", allow('c', 136, std::nullopt, "rwm")},  // /dev/pts/*, and /dev/console (a pts bind mount)
      {"", allow('c', 5, 2, "rwm")},               // /dev/ptmx
      {"", allow('c', 10, 200, "rwm")},            // /dev/net/tun: gone in runc 1.2.0-1.2.3, back in 1.2.4
  };
  return table;
}

bool covers(const DeviceRule& key, const Access& a) {
  return key.type == a.type && (!key.major || *key.major == a.major) && (!key.minor || *key.minor == a.minor);
}

// Key is an exception's (type, major, minor), a wildcard as -1.
using Key = std::tuple<char, std::int64_t, std::int64_t>;
Key key_of(const DeviceRule& r) {
  return {r.type, r.major.value_or(-1), r.minor.value_or(-1)};
}

// Controller is the v1 controller after a rule list: the default and the
// exceptions, each holding the access it grants against the default.
struct Controller {
  bool default_allow = false;
  std::map<Key, Bits> exceptions;
};

std::string key_text(const Key& k) {
  auto num = [](std::int64_t n) { return n < 0 ? std::string("*") : std::to_string(n); };
  return std::string(1, std::get<0>(k)) + " " + num(std::get<1>(k)) + ":" + num(std::get<2>(k));
}

// emulate applies rules the way the controller (and runc's emulator) does,
// refusing, as runc does, a removal that a wildcard exception would undo.
Controller emulate(const std::vector<DeviceRule>& rules) {
  Controller s;
  for (const auto& r : rules) {
    if (r.type == 'a') {
      s = Controller{r.allow, {}};
      continue;
    }
    Key k = key_of(r);
    Bits b = bits(r.access);
    if (r.allow != s.default_allow) {
      s.exceptions[k] |= b;
      continue;
    }
    auto [type, major, minor] = k;
    for (Key wider : {Key{type, -1, minor}, Key{type, major, -1}, Key{type, -1, -1}}) {
      if (wider == k) continue;
      auto w = s.exceptions.find(wider);
      if (w != s.exceptions.end() && (w->second & b))
        throw Error("device rule `" + str(r) + "` cannot take access from the wider rule `" + key_text(wider) + " " +
                    access_text(w->second) + "` before it (the cgroup v1 controller would ignore it; runc refuses it)");
    }
    auto e = s.exceptions.find(k);
    if (e == s.exceptions.end()) continue;
    e->second &= ~b;
    if (!e->second) s.exceptions.erase(e);
  }
  return s;
}

// Instruction builders for the few forms the program uses.
bpf_insn insn(std::uint8_t code, std::uint8_t dst, std::uint8_t src, std::int16_t off, std::int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}
bpf_insn load_word(std::uint8_t dst, std::int16_t off) {
  return insn(BPF_LDX | BPF_MEM | BPF_W, dst, BPF_REG_1, off, 0);
}
bpf_insn alu32(std::uint8_t op, std::uint8_t dst, std::int32_t imm) {
  return insn(BPF_ALU | op | BPF_K, dst, 0, 0, imm);
}
bpf_insn mov32_reg(std::uint8_t dst, std::uint8_t src) {
  return insn(BPF_ALU | BPF_MOV | BPF_X, dst, src, 0, 0);
}
bpf_insn jmp32(std::uint8_t op, std::uint8_t dst, std::int32_t imm, std::int16_t off) {
  return insn(BPF_JMP32 | op | BPF_K, dst, 0, off, imm);
}
bpf_insn exit_insn() {
  return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

}  // namespace

std::string str(const DeviceRule& rule) {
  auto num = [](const std::optional<std::int64_t>& n) { return n ? std::to_string(*n) : std::string("*"); };
  return std::string(1, rule.type) + " " + num(rule.major) + ":" + num(rule.minor) + " " + rule.access;
}

const std::vector<DeviceRule>& runc_default_rules() {
  static const std::vector<DeviceRule> rules = [] {
    std::vector<DeviceRule> out;
    for (const auto& d : defaults()) out.push_back(d.rule);
    return out;
  }();
  return rules;
}

std::vector<DeviceRule> container_rules(const Spec& spec) {
  std::vector<DeviceRule> rules = read_device_rules(spec);
  const Json* nodes = spec.find({"linux", "devices"});
  for (const auto& d : defaults()) {
    bool dropped = false;
    if (*d.path && nodes && nodes->is_array())
      for (const auto& n : *nodes)
        if (n.is_object() && n.contains("path") && n["path"].is_string() && n["path"].get<std::string>() == d.path)
          dropped = true;
    if (!dropped) rules.push_back(d.rule);
  }
  return rules;
}

bool reference_decision(const std::vector<DeviceRule>& rules, const Access& access) {
  // Written per access, not through emulate(), so the test of the compiler
  // does not check the emulator against itself.
  bool default_allow = false;
  std::size_t start = 0;
  for (std::size_t i = 0; i < rules.size(); ++i)
    if (rules[i].type == 'a') default_allow = rules[i].allow, start = i + 1;
  Bits want = bit(access.access);
  for (std::size_t i = start; i < rules.size(); ++i) {
    if (!covers(rules[i], access)) continue;
    // The key of rules[i] covers the device: does it hold the access? Only the
    // last rule with exactly this key and this access bit says.
    const DeviceRule* last = nullptr;
    for (std::size_t j = start; j < rules.size(); ++j)
      if (key_of(rules[j]) == key_of(rules[i]) && (bits(rules[j].access) & want)) last = &rules[j];
    if (last && last->allow != default_allow) return !default_allow;
  }
  return default_allow;
}

Reduced reduce(const std::vector<DeviceRule>& rules) {
  Controller s = emulate(rules);
  Reduced out{s.default_allow, {}};
  for (const auto& [key, held] : s.exceptions) {
    auto [type, major, minor] = key;
    out.exceptions.push_back({!s.default_allow, type, major < 0 ? std::nullopt : std::optional(major),
                              minor < 0 ? std::nullopt : std::optional(minor), access_text(held)});
  }
  return out;
}

std::vector<bpf_insn> compile_program(const std::vector<DeviceRule>& rules) {
  Controller s = emulate(rules);
  // r2 = type, r3 = access (bpf_cgroup_dev_ctx.access_type's halves), r4 = major, r5 = minor.
  std::vector<bpf_insn> p = {
      load_word(BPF_REG_2, offsetof(bpf_cgroup_dev_ctx, access_type)),
      alu32(BPF_AND, BPF_REG_2, 0xffff),
      load_word(BPF_REG_3, offsetof(bpf_cgroup_dev_ctx, access_type)),
      alu32(BPF_RSH, BPF_REG_3, 16),
      load_word(BPF_REG_4, offsetof(bpf_cgroup_dev_ctx, major)),
      load_word(BPF_REG_5, offsetof(bpf_cgroup_dev_ctx, minor)),
  };
  // One block per exception: tests that jump to the next block on a
  // mismatch, then "return the exception's verdict". The jump offsets are
  // filled in once the block's length is known.
  for (const auto& [key, held] : s.exceptions) {
    auto [type, major, minor] = key;
    std::size_t first = p.size();
    p.push_back(jmp32(BPF_JNE, BPF_REG_2, type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK, 0));
    if (held != kAll) {
      p.push_back(mov32_reg(BPF_REG_1, BPF_REG_3));
      if (s.default_allow) {
        // Denied when the request holds any of the exception's bits.
        p.push_back(alu32(BPF_AND, BPF_REG_1, static_cast<std::int32_t>(held)));
        p.push_back(jmp32(BPF_JEQ, BPF_REG_1, 0, 0));
      } else {
        // Allowed when the exception holds every bit of the request.
        p.push_back(alu32(BPF_AND, BPF_REG_1, static_cast<std::int32_t>(~held & kAll)));
        p.push_back(jmp32(BPF_JNE, BPF_REG_1, 0, 0));
      }
    }
    // Numbers are u32: jmp32 compares them whole, imm being their bit pattern.
    if (major >= 0) p.push_back(jmp32(BPF_JNE, BPF_REG_4, static_cast<std::int32_t>(major), 0));
    if (minor >= 0) p.push_back(jmp32(BPF_JNE, BPF_REG_5, static_cast<std::int32_t>(minor), 0));
    p.push_back(insn(BPF_ALU | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, s.default_allow ? 0 : 1));
    p.push_back(exit_insn());
    std::size_t next = p.size();
    for (std::size_t i = first; i < next - 2; ++i)
      if (BPF_CLASS(p[i].code) == BPF_JMP32) p[i].off = static_cast<std::int16_t>(next - i - 1);
  }
  p.push_back(insn(BPF_ALU | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, s.default_allow ? 1 : 0));
  p.push_back(exit_insn());
  return p;
}

}  // namespace specshim::live
