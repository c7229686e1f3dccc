// SPDX-License-Identifier: Apache-2.0
// Doctor's CDI check: every spec file in the CDI spec directories loads.
#include <algorithm>

#include "doctor/doctor.h"
#include "specshim/error.h"
#include "specshim/fs.h"
#include "specshim/spec.h"

namespace specshim::shim::doctor {
namespace {

// CDI's default spec directories (static specs, then generated ones).
constexpr const char* kSpecDirs[] = {"/etc/cdi", "/var/run/cdi"};
constexpr std::size_t kMaxSpecBytes = 4 << 20;

// check_spec_file returns why a CDI spec file does not load, or empty.
// Seam: this is a stand-in until the cdi modifier's loader lands; then it
// becomes a call to that loader, which also reads YAML and validates the
// whole schema. Until then JSON files are checked for syntax (with the
// line) and the fields every spec has.
std::string check_spec_file(const std::filesystem::path& file) {
  try {
    Spec doc = Spec::parse(fs::read_regular_file(file, kMaxSpecBytes));
    for (const char* key : {"cdiVersion", "kind"}) {
      const Json* v = doc.find({key});
      if (!v || !v->is_string()) return std::string("`") + key + "` is missing or not a string";
    }
    const Json* devices = doc.find({"devices"});
    if (!devices || !devices->is_array() || devices->empty()) return "`devices` is missing or empty";
    return {};
  } catch (const std::exception& e) {
    return describe(e);
  }
}

}  // namespace

Check check_cdi(const Host& host) {
  Check c("cdi");
  int files = 0;
  for (const char* dir : kSpecDirs) {
    std::filesystem::path path = host.path(dir);
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      c.add(Status::info, path.string() + ": absent");
      continue;
    }
    std::vector<std::filesystem::path> entries;
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) entries.push_back(e.path());
    if (ec) c.add(Status::fail, path.string() + ": " + ec.message());
    std::sort(entries.begin(), entries.end());
    for (const auto& file : entries) {
      auto ext = file.extension();
      if (ext == ".yaml" || ext == ".yml") {
        ++files;
        c.add(Status::info, file.string() + ": YAML, not checked (needs the cdi modifier's loader)");
      } else if (ext == ".json") {
        ++files;
        std::string why = check_spec_file(file);
        c.add(why.empty() ? Status::ok : Status::fail, file.string() + (why.empty() ? ": loaded" : ": " + why));
      }
    }
  }
  if (files == 0) c.add(Status::info, "no CDI spec files");
  return c;
}

}  // namespace specshim::shim::doctor
