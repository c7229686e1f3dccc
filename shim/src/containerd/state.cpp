// SPDX-License-Identifier: Apache-2.0
// The run's log and the state file: KEY=VALUE lines written by configure,
// read by unconfigure, in install-on-host.sh's format (base64 for lines).
#include <cstdio>
#include <cstring>
#include <string>

#include "containerd/install.h"
#include "specshim/base/fs.h"

namespace specshim::shim::containerd {

std::string Run::strip_root(const std::string& p) const {
  return p.rfind(opt.host_root, 0) == 0 ? p.substr(opt.host_root.size()) : p;
}

void Run::log(const std::string& msg) const {
  std::string line = "specshim-install: " + msg + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

void Run::change(const std::string& msg) {
  if (!dry) {
    log(msg);
    return;
  }
  planned.push_back(msg);
  log("would: " + msg);
}

std::string state_get(const Run& run, const std::string& key) {
  auto text = read_file(run.host(kStateRel));
  if (!text || !is_file(run.host(kStateRel))) return "";
  std::string value;
  for (const auto& line : cc::lines(*text))
    if (line.rfind(key + "=", 0) == 0) value = line.substr(key.size() + 1);
  return value;
}

bool state_exists(const Run& run) {
  return is_file(run.host(kStateRel));
}

void state_write(Run& run, const std::vector<std::string>& lines) {
  std::string content;
  for (const auto& l : lines) content += l + "\n";
  std::string file = run.host(kStateRel);
  if (run.dry) {
    auto now = read_file(file);
    if (!now || *now != content) run.change("write " + std::string(kStateRel));
    return;
  }
  mkdirs(cc::dirname(file));
  replace_file(file, content, 0644);
}

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string b64(const std::string& s) {
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    unsigned v = (unsigned char)s[i] << 16 | (unsigned char)s[i + 1] << 8 | (unsigned char)s[i + 2];
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
  }
  if (i + 1 == s.size()) {
    unsigned v = (unsigned char)s[i] << 16;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == s.size()) {
    unsigned v = (unsigned char)s[i] << 16 | (unsigned char)s[i + 1] << 8;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

std::string unb64(const std::string& s) {
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (char c : s) {
    const char* p = c ? std::strchr(kAlphabet, c) : nullptr;
    if (!p) continue;
    v = v << 6 | static_cast<unsigned>(p - kAlphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace specshim::shim::containerd
