// SPDX-License-Identifier: Apache-2.0
#include "runc_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "specshim/base/error.h"
#include "specshim/base/runtime_kind.h"

namespace specshim::shim {
namespace {

// go_quote escapes like Go's strconv.Quote for the text format.
std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t left = s.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string rfc3339_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string format_runc_log_line(std::string_view level, std::string_view msg, std::string_view format,
                                 std::string_view time) {
  if (format == "json") {
    nlohmann::ordered_json j;
    j["level"] = level;
    // Invalid UTF-8 must not lose the message: replace bad bytes.
    j["msg"] = msg;
    j["time"] = time;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return "time=\"" + std::string(time) + "\" level=" + std::string(level) + " msg=" + go_quote(msg) + "\n";
}

namespace {

void report(std::string_view level, const std::optional<std::string>& log_path, std::string_view format,
            std::string_view msg) {
  std::string line = format_runc_log_line(level, cap_message(msg), format, rfc3339_now());
  int fd = -1;
  std::string file(log_path ? runtime::log_file(*log_path) : "");
  if (!file.empty()) fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    write_all(fd, line);
    ::close(fd);
  } else {
    write_all(STDERR_FILENO, line);
  }
}

}  // namespace

void report_error(const std::optional<std::string>& log_path, std::string_view format, std::string_view msg) {
  report("error", log_path, format, msg);
}

void report_warning(const std::optional<std::string>& log_path, std::string_view format, std::string_view msg) {
  report("warning", log_path, format, msg);
}

}  // namespace specshim::shim
