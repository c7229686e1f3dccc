// SPDX-License-Identifier: Apache-2.0
#include "settings.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "specshim/base/error.h"

namespace specshim::shim {
namespace {

std::shared_ptr<spdlog::logger> g_logger;

void sink(log::Level level, std::string_view msg) {
  if (!g_logger) return;
  g_logger->log(static_cast<spdlog::level::level_enum>(level), "{}", msg);
}

}  // namespace

std::optional<std::string> runtime_path_only(const config::Document& doc) {
  try {
    auto root = doc.root();
    if (auto runtime = root.table("runtime")) return runtime->string("path");
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<std::string> runtime_path_only(const std::filesystem::path& file) {
  try {
    return runtime_path_only(config::Document::load(file));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void start_debug_log(const Settings& s) {
  if (!s.log_file || s.log_level == log::Level::off) return;
  try {
    auto file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(*s.log_file);
    g_logger = std::make_shared<spdlog::logger>("specshim", file_sink);
    g_logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z [%P] %l %v");
    g_logger->set_level(static_cast<spdlog::level::level_enum>(s.log_level));
    g_logger->flush_on(spdlog::level::trace);
    log::set_sink(sink, s.log_level);
  } catch (const spdlog::spdlog_ex& e) {
    throw Error(std::string("open debug log [log] file `") + *s.log_file + "`: " + e.what());
  }
}

void stop_debug_log() {
  log::set_sink(nullptr, log::Level::off);
  if (g_logger) g_logger->flush();
  g_logger.reset();
}

}  // namespace specshim::shim
