// SPDX-License-Identifier: Apache-2.0
// specshim-nri: specshim's chain as an NRI plugin (docs/nri.md). Connects to
// the runtime's NRI socket, registers, answers CreateContainer with the
// chain's adjustment, and dials again whenever the runtime goes away.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <thread>

#include "specshim/base/error.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/config_file.h"
#include "specshim/node/nri_status.h"
#include "specshim/nri/plugin.h"

namespace specshim::nri {
namespace {

// to_stderr: one line per message, as a DaemonSet's or a unit's log keeps it.
void to_stderr(log::Level level, std::string_view msg) {
  static const char* names[] = {"trace", "debug", "info", "warn", "error", "off"};
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  ::gmtime_r(&ts.tv_sec, &t);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &t);
  std::fprintf(stderr, "%s.%03ldZ %s %.*s\n", when, ts.tv_nsec / 1000000, names[static_cast<int>(level)],
               static_cast<int>(msg.size()), msg.data());
}

// g_registered is the registration file (specshim/node/nri_status.h), removed
// when a signal ends the plugin so that doctor does not read it as registered.
char g_registered[4096];

void on_term(int sig) {
  ::unlink(g_registered);
  ::_exit(128 + sig);
}

// kRedial: how long to wait before dialing again after the runtime went
// away or refused the plugin (NVIDIA's plugin waits 2 s).
constexpr std::chrono::seconds kRedial{1};

// serve_forever dials socket, serves the runtime until it goes away, and
// dials again: the runtime removes and recreates its socket when it restarts.
[[noreturn]] void serve_forever(const std::string& socket, const std::string& config_file, const ConfigFile& config) {
  Registration reg;
  reg.index = config.nri.index;
  std::snprintf(g_registered, sizeof g_registered, "%s", nri_status::file(config.nri).c_str());
  std::signal(SIGTERM, on_term);
  std::signal(SIGINT, on_term);
  Plugin plugin(config_file, config.nri, reg.name);
  bool waiting = false;
  for (;;) {
    int fd = connect_unix(socket);
    if (fd < 0) {
      if (!waiting) log::info("nri: waiting for `{}`: {}", socket, std::strerror(errno));
      waiting = true;
      std::this_thread::sleep_for(kRedial);
      continue;
    }
    waiting = false;
    log::info("nri: connected to `{}`, registering as {}-{}", socket, reg.index, reg.name);
    try {
      log::info("nri: {}; dialing again", serve(fd, reg, plugin));
    } catch (const std::exception& e) {
      log::warn("nri: {}; dialing again", describe(e));
    }
    plugin.disconnected();
    ::close(fd);
    std::this_thread::sleep_for(kRedial);
  }
}

}  // namespace
}  // namespace specshim::nri

int main(int argc, char** argv) {
  using namespace specshim;
  CLI::App app{"specshim-nri: specshim's spec modifiers as an NRI plugin (docs/nri.md)", "specshim-nri"};
  std::string config_file = config::kDefaultPath, socket;
  app.add_option("--config", config_file, "specshim's config file")->capture_default_str();
  app.add_option("--socket", socket, "the runtime's NRI socket (default: [nri] socket, /var/run/nri/nri.sock)");
  app.set_version_flag("--version", std::string("specshim-nri ") + SPECSHIM_VERSION);
  CLI11_PARSE(app, argc, argv);

  std::optional<ConfigFile> config;
  try {
    config.emplace(read_config_file(config_file));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "specshim-nri: %s\n", describe(e).c_str());
    return 1;
  }
  log::set_sink(specshim::nri::to_stderr, config->settings.log_level);
  if (socket.empty()) socket = config->nri.socket;
  specshim::nri::serve_forever(socket, config_file, *config);
}
