// SPDX-License-Identifier: Apache-2.0
#include "specshim/node/nvidia_gpus.h"

#include <algorithm>
#include <charconv>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/text.h"

namespace specshim::nvidia {
namespace {

namespace sfs = std::filesystem;

// field is the value of the line "key: value", or "" when there is none.
std::string_view field(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    auto colon = line.find(':');
    if (colon != std::string_view::npos && trim(line.substr(0, colon), " \t", " \t\r") == key)
      return trim(line.substr(colon + 1), " \t", " \t\r");
    at = end + 1;
  }
  return {};
}

bool same_uuid(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

sfs::path gpus_dir(const sfs::path& proc) {
  return proc / "driver" / "nvidia" / "gpus";
}

}  // namespace

Gpu parse_information(std::string_view text, const std::string& what) {
  Gpu g;
  g.uuid = std::string(field(text, "GPU UUID"));
  if (g.uuid.empty()) throw Error(what + ": no `GPU UUID:` line");
  for (char c : g.uuid)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-'))
      throw Error(what + ": `GPU UUID:` " + g.uuid + " is not a UUID");
  std::string_view minor = field(text, "Device Minor");
  auto [end, ec] = std::from_chars(minor.data(), minor.data() + minor.size(), g.minor);
  if (minor.empty() || ec != std::errc() || end != minor.data() + minor.size() || g.minor < 0 || g.minor > 255)
    throw Error(what + ": `Device Minor:` " + std::string(minor) + " is not a minor number (0-255)");
  return g;
}

std::vector<Gpu> read_gpus(const sfs::path& proc) {
  std::vector<Gpu> gpus;
  std::error_code ec;
  for (const auto& e : sfs::directory_iterator(gpus_dir(proc), ec)) {
    sfs::path file = e.path() / "information";
    Gpu g = parse_information(fs::read_regular_file(file, 64 << 10), file.string());
    g.address = e.path().filename().string();
    gpus.push_back(std::move(g));
  }
  std::sort(gpus.begin(), gpus.end(), [](const Gpu& a, const Gpu& b) { return a.minor < b.minor; });
  return gpus;
}

const Gpu& find_gpu(const std::vector<Gpu>& gpus, std::string_view uuid, const sfs::path& proc) {
  for (const auto& g : gpus)
    if (same_uuid(g.uuid, uuid)) return g;
  std::vector<std::string> have;
  for (const auto& g : gpus) have.push_back(g.uuid + " (" + g.node() + ")");
  throw Error("GPU `" + std::string(uuid) + "`: no such GPU in " + gpus_dir(proc).string() +
              (have.empty() ? " (no NVIDIA driver loaded, or no GPU)" : "; it has " + join(have, ", ")));
}

}  // namespace specshim::nvidia
