// SPDX-License-Identifier: Apache-2.0
// File helpers with the guarantees the shim's non-negotiables ask for.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/base/file_owner.h"

namespace specshim::fs {

// clean_path is a path lexically normal, without a trailing slash ("/"
// stays): /etc//hosts/ is /etc/hosts. Nothing on disk is looked at.
std::string clean_path(std::string_view path);

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

// lock_within takes flock(operation: LOCK_SH or LOCK_EX) on fd, retrying
// with growing pauses for at most limit. Throws Error "lock `path`: <holder>
// has held it for N s" when it did not get it.
void lock_within(int fd, int operation, std::chrono::seconds limit, const std::string& path, const std::string& holder);

// read_regular_file reads a regular file of at most max_bytes. Throws Error
// for anything else (missing, directory, FIFO, too large) naming the path.
std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes);

// read_open_file reads the open regular file fd (st is its fstat) of at most
// max_bytes; what names it in errors. Throws Error for a larger file or a
// failed read.
std::string read_open_file(int fd, const struct stat& st, std::size_t max_bytes, const std::string& what);

// DirEntry is one name in a directory, with its getdents d_type (DT_DIR,
// DT_REG, ... or DT_UNKNOWN).
struct DirEntry {
  std::string name;
  unsigned char type;
};

// list_directory reads the names in the open directory dirfd ("." and ".."
// left out) into entries, in the order the filesystem gives them, with
// getdents64 into a buffer on the stack: opendir's 32 KiB heap buffer made
// malloc grow the heap and trim it again for every listing. Returns false
// with errno set when the directory cannot be read.
bool list_directory(int dirfd, std::vector<DirEntry>& entries);

// TempFile picks where write_file_atomic writes the new content first:
// unnamed uses an O_TMPFILE file and falls back to a named temp file when the
// filesystem or kernel lacks O_TMPFILE; named always uses a named temp file
// (tests use it to cover the fallback on any filesystem).
enum class TempFile { unnamed, named };

// write_file_atomic replaces dir/name with content, created with mode (and
// owner, chown'd before anything is written, when given), then
// fsyncs dir. Readers see the old file or the new one, never a partial one;
// on failure dir/name is untouched and no temp file is left. The new content
// is written and fsync'd in an unnamed (O_TMPFILE) file, linked to a temp
// name, and renamed over name; a new name is linked directly. A SIGKILL
// leaves a temp file only between that link and the rename (a whole file,
// for remove_stale_temps); with a named temp file (TempFile::named, or no
// O_TMPFILE) from its creation to the rename. Temp files are named
// ".<name>.specshim-<pid>-<random>.tmp". Fault points (fault_point):
// after-temp-write, before-rename (only when name exists), after-rename.
void write_file_atomic(const std::filesystem::path& dir, std::string_view name, std::string_view content, mode_t mode,
                       TempFile temp = TempFile::unnamed, const std::optional<FileOwner>& owner = std::nullopt);

// temp_file_owner returns the pid in a temp file name write_file_atomic
// makes, and nullopt for any other name.
std::optional<pid_t> temp_file_owner(std::string_view entry);

// remove_stale_temps removes from dir the temp files killed writers left:
// regular files named exactly as write_file_atomic names them, whose pid no
// longer exists (kill(pid, 0) fails with ESRCH) or is this process, which
// has no write in flight when it calls this. A live pid keeps its file: it
// may be a writer in flight, or a reused pid (the file then goes on a later
// call). Symlinks, directories and other names are left alone and nothing
// is followed. One listing of dir. Returns the names removed; throws Error
// when dir cannot be read or a file cannot be removed.
std::vector<std::string> remove_stale_temps(const std::filesystem::path& dir);

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
