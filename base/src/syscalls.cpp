// SPDX-License-Identifier: Apache-2.0
// The one place that talks to libseccomp. Only its name tables are used:
// nothing here builds or loads a filter.
#include "specshim/base/syscalls.h"

#include <seccomp.h>

#include <algorithm>
#include <cctype>

#include "specshim/base/error.h"

namespace specshim::syscalls {
namespace {

constexpr std::string_view kPrefix = "SCMP_ARCH_";
// libseccomp's pseudo syscall numbers: -101.. socketcall and -201.. ipc
// multiplexed calls (they exist, behind one syscall); -10000 and below name a
// syscall the architecture does not have.
constexpr int kFirstAbsentPseudo = -10000;

std::uint32_t token_of(std::string_view arch) {
  std::string lower;
  if (arch.substr(0, kPrefix.size()) == kPrefix) {
    for (char c : arch.substr(kPrefix.size())) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  std::uint32_t token = lower.empty() ? 0 : seccomp_arch_resolve_name(lower.c_str());
  if (token == 0) throw Error("unknown seccomp architecture `" + std::string(arch) + "`");
  return token;
}

std::string oci_name(std::uint32_t token) {
  for (const char* name : {"x86_64", "x86", "x32", "aarch64", "arm", "riscv64", "ppc64le", "ppc64", "s390x", "s390",
                           "mips", "mipsel", "mips64", "mipsel64", "mips64n32", "mipsel64n32"}) {
    if (seccomp_arch_resolve_name(name) == token) {
      std::string upper(name);
      std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
      return std::string(kPrefix) + upper;
    }
  }
  throw Error("native seccomp architecture " + std::to_string(token) + " has no known name");
}

}  // namespace

std::string native_arch() {
  return oci_name(seccomp_arch_native());
}

const std::vector<std::string>& common_archs() {
  static const std::vector<std::string> archs = [] {
    std::vector<std::string> v{native_arch()};
    for (const char* a : {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM",
                          "SCMP_ARCH_PPC64LE", "SCMP_ARCH_S390X", "SCMP_ARCH_RISCV64"})
      if (std::find(v.begin(), v.end(), a) == v.end()) v.emplace_back(a);
    return v;
  }();
  return archs;
}

bool exists_on(std::string_view syscall, std::string_view arch) {
  std::uint32_t token = token_of(arch);
  std::string name(syscall);
  int nr = seccomp_syscall_resolve_name_arch(token, name.c_str());
  if (nr == __NR_SCMP_ERROR || nr == __NR_SCMP_UNDEF) return false;
  return nr >= 0 || nr > kFirstAbsentPseudo;
}

}  // namespace specshim::syscalls
