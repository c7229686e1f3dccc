// SPDX-License-Identifier: Apache-2.0
#include "specshim/nri_status.h"

#include <cerrno>

#include "specshim/error.h"
#include "specshim/fs.h"
#include "specshim/spec.h"

namespace specshim::nri_status {

std::filesystem::path file(const NriSettings& nri) {
  return std::filesystem::path(nri.state_dir) / ".registered";
}

void write(const NriSettings& nri, const Status& s) {
  std::error_code ec;
  std::filesystem::create_directories(nri.state_dir, ec);
  if (ec) throw Error("create `" + nri.state_dir + "`: " + ec.message());
  Json j = {
      {"pid", s.pid}, {"plugin", s.plugin}, {"runtime", s.runtime}, {"nri_minor", s.nri_minor}, {"since", s.since}};
  fs::write_file_atomic(nri.state_dir, ".registered", j.dump() + "\n", 0644);
}

void remove(const NriSettings& nri) {
  std::error_code ec;
  std::filesystem::remove(file(nri), ec);
}

std::optional<Status> read(const NriSettings& nri) {
  std::filesystem::path path = file(nri);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    Json j = parse_json(fs::read_regular_file(path, 64 << 10), "");
    Status s;
    s.pid = j.at("pid").get<pid_t>();
    s.plugin = j.at("plugin").get<std::string>();
    s.runtime = j.at("runtime").get<std::string>();
    s.nri_minor = j.at("nri_minor").get<int>();
    s.since = j.at("since").get<std::int64_t>();
    return s;
  } catch (const std::exception& e) {
    throw Error("read `" + path.string() + "`: " + describe(e));
  }
}

}  // namespace specshim::nri_status
