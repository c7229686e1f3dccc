// SPDX-License-Identifier: Apache-2.0
#include "specshim/config_file.h"

#include <algorithm>
#include <cctype>

#include "specshim/cdi.h"
#include "specshim/error.h"

namespace specshim {

Settings read_settings(config::Section& root) {
  Settings s;
  auto runtime = root.section("runtime");
  s.runtime_path = runtime.string("path");
  if (s.runtime_path && (s.runtime_path->empty() || (*s.runtime_path)[0] != '/'))
    runtime.fail("path", "must be an absolute path");
  runtime.finish();

  auto logt = root.section("log");
  s.log_file = logt.string("file");
  if (s.log_file && (s.log_file->empty() || (*s.log_file)[0] != '/')) logt.fail("file", "must be an absolute path");
  if (auto level = logt.string("level")) {
    static const std::pair<const char*, log::Level> levels[] = {
        {"trace", log::Level::trace}, {"debug", log::Level::debug}, {"info", log::Level::info},
        {"warn", log::Level::warn},   {"error", log::Level::error}, {"off", log::Level::off}};
    bool found = false;
    for (auto& [name, l] : levels)
      if (*level == name) s.log_level = l, found = true;
    if (!found) logt.fail("level", "must be one of trace, debug, info, warn, error, off");
  }
  logt.finish();
  return s;
}

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

ConfigFile read_config_file(const std::filesystem::path& file) {
  return read_config_file(config::Document::load(file));
}

ConfigFile read_config_file(config::Document doc) {
  auto root = doc.root();
  Settings settings = read_settings(root);
  NriSettings nri = read_nri_settings(root);
  Chain chain = build_chain(root);
  auto cdi = root.section("cdi");
  auto cdi_dirs = cdi::read_spec_dirs(cdi);
  auto hotplug_table = root.section("hotplug");
  hotplug::Config hotplug = hotplug::read_config(hotplug_table, hotplug::kubelet_configured(root));
  root.finish();
  return ConfigFile{std::move(doc),   std::move(settings), std::move(nri),
                    std::move(chain), std::move(cdi_dirs), std::move(hotplug)};
}

}  // namespace specshim
