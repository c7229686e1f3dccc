// SPDX-License-Identifier: Apache-2.0
#include "specshim/base/log.h"

namespace specshim::log {
namespace {
Sink g_sink = nullptr;
Level g_level = Level::off;
}  // namespace

void set_sink(Sink sink, Level level) {
  g_sink = sink;
  g_level = sink ? level : Level::off;
}

bool enabled(Level level) {
  return g_sink != nullptr && level >= g_level && level != Level::off;
}

void write(Level level, std::string_view msg) {
  if (enabled(level)) g_sink(level, msg);
}

}  // namespace specshim::log
