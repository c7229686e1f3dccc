// SPDX-License-Identifier: Apache-2.0
// File helpers with the guarantees the shim's non-negotiables ask for.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace specshim::fs {

// read_regular_file reads a regular file of at most max_bytes. Throws Error
// for anything else (missing, directory, FIFO, too large) naming the path.
std::string read_regular_file(const std::filesystem::path& path, std::size_t max_bytes);

// write_file_atomic replaces dir/name with content: a temp file in dir created
// with mode, written, fsync'd, renamed over name, then dir fsync'd. Readers
// see the old file or the new one, never a partial one; on failure the temp
// file is removed and dir/name is untouched.
void write_file_atomic(const std::filesystem::path& dir, std::string_view name, std::string_view content,
                       mode_t mode);

// fault_point is a test hook: when SPECSHIM_FAULT names this point, the
// process kills itself with SIGKILL right there (see test/hardening).
void fault_point(const char* point);

}  // namespace specshim::fs
