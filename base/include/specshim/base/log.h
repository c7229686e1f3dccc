// SPDX-License-Identifier: Apache-2.0
// Logging facade for library code. The shim installs the sink (a debug file
// from the config); below shim/ nobody knows where lines go. Messages are
// only formatted when their level is enabled, so debug lines cost nothing on
// the hot path.
#pragma once

#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace specshim::log {

enum class Level { trace = 0, debug, info, warn, error, off };

using Sink = void (*)(Level, std::string_view);

// set_sink installs where lines go and the lowest level that is written.
void set_sink(Sink sink, Level level);
bool enabled(Level level);
void write(Level level, std::string_view msg);

template <typename... A>
void debug(fmt::format_string<A...> f, A&&... a) {
  if (enabled(Level::debug)) write(Level::debug, fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void info(fmt::format_string<A...> f, A&&... a) {
  if (enabled(Level::info)) write(Level::info, fmt::format(f, std::forward<A>(a)...));
}
template <typename... A>
void warn(fmt::format_string<A...> f, A&&... a) {
  if (enabled(Level::warn)) write(Level::warn, fmt::format(f, std::forward<A>(a)...));
}

}  // namespace specshim::log
