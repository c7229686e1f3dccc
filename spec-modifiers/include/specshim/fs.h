// SPDX-License-Identifier: Apache-2.0
// File helpers with the guarantees the shim's non-negotiables ask for.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "specshim/error.h"

namespace specshim::fs {

// Fd owns a file descriptor and closes it when it goes away.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// read_regular_file reads a regular file of at most max_bytes. Throws Error
// for anything else (missing, directory, FIFO, too large) naming the path.
std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes);

// write_file_atomic replaces dir/name with content: a temp file in dir created
// with mode, written, fsync'd, renamed over name, then dir fsync'd. Readers
// see the old file or the new one, never a partial one; on failure the temp
// file is removed and dir/name is untouched.
void write_file_atomic(const std::filesystem::path& dir, std::string_view name, std::string_view content, mode_t mode);

// NotFound is what the in-root functions throw when the path does not exist
// inside the root (ENOENT). Every other failure is a plain Error.
class NotFound : public Error {
 public:
  using Error::Error;
};

// Resolve picks how the in-root functions walk a path: automatic uses
// openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) and falls back to the
// userspace walk when the kernel lacks openat2 (ENOSYS); userspace always
// walks in userspace (tests use it to cover the fallback on any kernel).
enum class Resolve { automatic, userspace };

// open_in_root opens `relative` below `root` the way a process chrooted into
// root would see it: root acts as "/", ".." stops at root, and absolute and
// relative symlinks resolve inside root. No path outside root is ever opened,
// whatever the symlinks in root say. The result is an O_PATH descriptor, so
// reaching a FIFO or a device node has no side effect; check its type with
// fstat before reopening it. Throws NotFound when the path does not exist in
// root, Error for loops (ELOOP), a non-directory in the middle (ENOTDIR) and
// anything else. root itself is a trusted host path and is opened normally.
Fd open_in_root(const std::filesystem::path& root, const std::filesystem::path& relative,
                Resolve how = Resolve::automatic);

// RootFile is a regular file read from inside a root, with the stat of the
// very inode that was read (owner and mode for permission checks).
struct RootFile {
  std::string content;
  struct stat st {};
};

// read_file_in_root reads the regular file `relative` below `root` (resolved
// as open_in_root does) of at most max_bytes. Returns nullopt when it does not
// exist. Throws Error for a non-regular file (FIFO, device, socket,
// directory: never opened for reading), a file over max_bytes, and any
// resolution error. The file is reopened for reading through its O_PATH
// descriptor (/proc/self/fd), so what is read is the inode that was checked.
std::optional<RootFile> read_file_in_root(const std::filesystem::path& root, const std::filesystem::path& relative,
                                          std::size_t max_bytes, Resolve how = Resolve::automatic);

// fault_point is a test hook: when SPECSHIM_FAULT is "<file>:<point>" (e.g.
// "config.json:before-rename"), the
// process kills itself with SIGKILL right there (test/integration/faults_test.cpp).
void fault_point(std::string_view file, std::string_view point);

}  // namespace specshim::fs
