// SPDX-License-Identifier: Apache-2.0
#include "specshim/node/nri_status.h"

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/spec.h"

namespace specshim {

bool NriSettings::is_container_id(const std::string& id) {
  return !id.empty() && id.size() <= 128 && id[0] != '.' && std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

std::filesystem::path NriSettings::container_dir(const std::string& id) const {
  if (!is_container_id(id)) throw Error("container id `" + id + "` is not a name specshim-nri keeps files under");
  return std::filesystem::path(state_dir) / id;
}

NriSettings read_nri_settings(config::Section& root) {
  NriSettings s;
  auto nri = root.section("nri");
  auto absolute = [&](const char* key, std::string& out) {
    if (auto v = nri.string(key)) {
      if (v->empty() || (*v)[0] != '/') nri.fail(key, "must be an absolute path");
      out = *v;
    }
  };
  absolute("socket", s.socket);
  absolute("state-dir", s.state_dir);
  absolute("hook-binary", s.hook_binary);
  s.passwd_hook = nri.boolean("passwd-hook").value_or(s.passwd_hook);
  if (auto index = nri.string("index")) {
    // NRI takes exactly two digits (CheckPluginIndex).
    if (index->size() != 2 || !isdigit(static_cast<unsigned char>((*index)[0])) ||
        !isdigit(static_cast<unsigned char>((*index)[1])))
      nri.fail("index", "must be two digits, \"00\" to \"99\"");
    s.index = *index;
  }
  if (auto ms = nri.integer("answer-margin-ms", 50, 60000)) s.answer_margin = std::chrono::milliseconds(*ms);
  if (auto globs = nri.strings("pod-annotations")) s.pod_annotations = std::move(*globs);
  if (auto handlers = nri.strings("shim-handlers")) s.shim_handlers = std::move(*handlers);
  nri.finish();
  return s;
}

}  // namespace specshim

namespace specshim::nri_status {

std::filesystem::path file(const NriSettings& nri) {
  return std::filesystem::path(nri.state_dir) / ".registered";
}

void write(const NriSettings& nri, const Registration& s) {
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

std::optional<Registration> read(const NriSettings& nri) {
  std::filesystem::path path = file(nri);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  try {
    Json j = parse_json(fs::read_regular_file(path, 64 << 10), "");
    Registration s;
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
