# SPDX-License-Identifier: Apache-2.0
# Cross build for arm64 (aarch64: NVIDIA Grace, Huawei Kunpeng) on a Debian 12
# amd64 machine, with Debian's own cross toolchain and multiarch libraries
# (scripts/install-deps.sh installs both: crossbuild-essential-arm64 and the
# :arm64 -dev packages):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# protoc and grpc_cpp_plugin stay the build machine's. Test binaries run under
# qemu-aarch64-static (CMAKE_CROSSCOMPILING_EMULATOR: catch_discover_tests and
# ctest use it); the processes they start run through the kernel's binfmt_misc
# entry for aarch64 (scripts/qemu-binfmt.sh). test/README.md, "arm64".
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Headers and libraries: the cross toolchain's sysroot-like tree (libc,
# libstdc++) and Debian's multiarch directories (/usr/lib/aarch64-linux-gnu,
# searched first for CMAKE_LIBRARY_ARCHITECTURE). Arch-independent packages
# (nlohmann-json, CLI11, Catch2's headers) live under / too, hence BOTH.
# Programs (protoc, grpc_cpp_plugin, clang-14 -target bpf) are the build
# machine's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config's cross wrapper reads only the aarch64 .pc files.
set(PKG_CONFIG_EXECUTABLE /usr/bin/aarch64-linux-gnu-pkg-config CACHE FILEPATH "pkg-config for aarch64")

# lld links aarch64 as it links x86-64, but a cross GCC looks for it only as
# aarch64-linux-gnu-ld.lld on PATH or as ld.lld in its -B directories: point it
# at the directory of the build machine's ld.lld (only the linker is taken
# from there).
find_program(SPECSHIM_LD_LLD ld.lld)
if(SPECSHIM_LD_LLD)
  file(REAL_PATH "${SPECSHIM_LD_LLD}" _lld)
  get_filename_component(_lld_dir "${_lld}" DIRECTORY)
  set(CMAKE_EXE_LINKER_FLAGS_INIT "-B${_lld_dir}/")
  set(CMAKE_SHARED_LINKER_FLAGS_INIT "-B${_lld_dir}/")
  set(CMAKE_MODULE_LINKER_FLAGS_INIT "-B${_lld_dir}/")
endif()

# Dynamic test binaries find the aarch64 loader and libraries where Debian's
# multiarch :arm64 packages put them (/lib/ld-linux-aarch64.so.1,
# /usr/lib/aarch64-linux-gnu), so qemu needs no -L prefix; with one
# (-L /usr/aarch64-linux-gnu, or QEMU_LD_PREFIX), qemu 7.2's forked children
# of a test hang before their execve, and every test that starts specshim
# times out.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
