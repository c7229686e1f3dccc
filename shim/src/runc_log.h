// SPDX-License-Identifier: Apache-2.0
// Writing failures where containerd reads them: runc's --log file, in runc's format.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace specshim::shim {

// format_runc_log_line renders one logrus-style line as runc writes it:
// json: {"level":"error","msg":"...","time":"2026-11-29T22:56:18Z"}
// text: time="2026-11-29T22:56:18Z" level=error msg="..."
std::string format_runc_log_line(std::string_view level, std::string_view msg, std::string_view format,
                                 std::string_view time);

// report_error appends an error line to the file log_path names
// (runtime::log_file: crun's file:PATH too; stderr when it names none, is
// absent or is unwritable), its msg capped at kMessageMax bytes (cap_message). containerd shows the msg of the last
// error line as "OCI runtime create failed: <msg>".
void report_error(const std::optional<std::string>& log_path, std::string_view format, std::string_view msg);
// report_warning appends a line at runc's level "warning" the same way: what
// a create that goes on wants the node's operators to find in the log.
void report_warning(const std::optional<std::string>& log_path, std::string_view format, std::string_view msg);

// rfc3339_now is the current UTC time with second precision.
std::string rfc3339_now();

}  // namespace specshim::shim
