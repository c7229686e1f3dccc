# SPDX-License-Identifier: Apache-2.0
# The tests of the unit, golden and cli tiers that the arm64 build
# (cmake/aarch64-linux-gnu.cmake, run under qemu-aarch64-static) leaves to
# amd64, each with the reason: they need what qemu-user does not emulate.
# Nothing else is left out. ctest reads this file after each test directory's
# Catch tests are discovered (test/CMakeLists.txt) and lists every entry as
# "Not Run (Disabled)" at the end of its run. test/README.md, "arm64".
macro(qemu_user_cannot_run test reason)
  set_tests_properties("${test}" PROPERTIES DISABLED TRUE)
endmacro()

# specshim finds itself on PATH by stat(2) of /proc/self/exe; under qemu-user
# that is the emulator (qemu answers only readlink and open of it for the
# guest), so a specshim installed as `runc` first on PATH does not skip itself.
qemu_user_cannot_run("cli:runtime lookup: configured path missing, PATH skips specshim itself"
                     "stat(/proc/self/exe) is qemu-aarch64-static under qemu-user")
# doctor loads a real cgroup device program (bpf(2) BPF_PROG_LOAD) and reports
# openat2(2): qemu 7.2's user mode implements neither (ENOSYS).
qemu_user_cannot_run("cli:doctor: kernel cgroup layouts" "bpf(2) and openat2(2) are ENOSYS under qemu-user")
qemu_user_cannot_run(
  "cli:doctor: hot-plug on a hybrid host as root: mode, a real device program load, capabilities, no systemd"
  "bpf(2) is ENOSYS under qemu-user")
