// SPDX-License-Identifier: Apache-2.0
// Scanning CDI spec directories into a Registry: which files to read, which
// to skip unparsed, and which definition of a name wins (pkg/cdi/spec-dirs.go,
// cache.go).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/log.h"
#include "specshim/node/cdi.h"
#include "specshim/node/cdi_cache.h"

namespace specshim::cdi {

const DeviceRef* Registry::find(const std::string& qualified_name) const {
  auto it = devices.find(qualified_name);
  return it == devices.end() ? nullptr : &it->second;
}

namespace {

bool has_spec_extension(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() > ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  return ends(".json") || ends(".yaml");
}

// list_spec_files returns dir's *.json and *.yaml entries in byte order, or
// an error text. A missing dir has no files and no error; a symlinked dir is
// followed.
std::vector<std::string> list_spec_files(const std::string& dir, std::string& error) {
  std::vector<std::string> names;
  fs::Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::vector<fs::DirEntry> entries;
  if (!fd || !fs::list_directory(fd.get(), entries)) {
    if (errno != ENOENT) error = "read spec dir `" + dir + "`: " + std::strerror(errno);
    return names;
  }
  for (auto& e : entries)
    if (e.type != DT_DIR && has_spec_extension(e.name)) names.push_back(std::move(e.name));
  std::sort(names.begin(), names.end());
  return names;
}

// literally reports whether word occurs in text as a whole value: not next
// to a character that `inside` says could continue it.
template <typename Inside>
bool literally(std::string_view text, std::string_view word, Inside inside) {
  for (auto at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    bool starts = at == 0 || !inside(text[at - 1]);
    bool ends = at + word.size() == text.size() || !inside(text[at + word.size()]);
    if (starts && ends) return true;
  }
  return false;
}

bool alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool in_kind(char c) {
  return alnum(c) || c == '_' || c == '.' || c == '-' || c == '/';
}
bool in_name(char c) {
  return alnum(c) || c == '_' || c == '.' || c == '-' || c == ':';
}

// may_be_rewritten: a plain YAML scalar that reads as an integer or a boolean
// becomes its canonical text ("0x10" is "16", "yes" is "true"), so such a
// name need not appear in the file as written.
bool may_be_rewritten(std::string_view name) {
  if (name == "true" || name == "false") return true;
  if (!name.empty() && name[0] == '-') name.remove_prefix(1);
  return !name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos;
}

// may_define reports whether text could define one of the wanted devices
// (qualified names). A string value can differ from its bytes in the file only
// through an escape (JSON, or a double-quoted YAML scalar: both need a
// backslash), through YAML line folding (which puts a space or newline into
// the value, invalid in kinds and names), or through YAML's integer and
// boolean reading (may_be_rewritten). So without a backslash, a file that
// defines kind=name holds the kind, and the name, each as a whole value.
// "kind=" wants every file of the kind.
bool may_define(std::string_view text, const std::set<std::string>& wanted) {
  if (text.find('\\') != std::string_view::npos) return true;
  for (const auto& q : wanted) {
    auto eq = q.find('=');
    std::string_view kind = std::string_view(q).substr(0, eq), name = std::string_view(q).substr(eq + 1);
    if (!literally(text, kind, in_kind)) continue;
    if (name.empty() || may_be_rewritten(name) || literally(text, name, in_name)) return true;
  }
  return false;
}

SpecFileResult load_file(const std::string& path, int priority, const std::set<std::string>* wanted,
                         const ParseCache* cache) {
  SpecFileResult r;
  r.path = path;
  r.priority = priority;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    r.status = SpecFileResult::Status::skipped;  // a symlink to a directory, as upstream's walk skips it
    return r;
  }
  try {
    std::string text = fs::read_regular_file(path, kMaxSpecFileBytes);
    if (wanted && !may_define(text, *wanted)) {
      r.status = SpecFileResult::Status::skipped;
      return r;
    }
    SpecFile spec = cache ? cache->parse(text, path) : parse_spec(text, path);
    if (cache) log::debug("cdi: spec file {}: {}", path, cache->last());
    spec.priority = priority;
    r.spec = std::make_shared<const SpecFile>(std::move(spec));
    r.status = SpecFileResult::Status::loaded;
  } catch (const std::exception& e) {
    r.status = SpecFileResult::Status::failed;
    r.error = specshim::describe(e);
  }
  return r;
}

}  // namespace

Registry load_specs(const std::vector<std::string>& dirs, const std::set<std::string>* wanted,
                    const ParseCache* cache) {
  Registry reg;
  reg.dirs = dirs;
  // Per name: the files that define it at the highest priority seen so far.
  std::map<std::string, std::vector<DeviceRef>> best;
  for (std::size_t p = 0; p < dirs.size(); ++p) {
    std::string error;
    std::vector<std::string> names = list_spec_files(dirs[p], error);
    if (!error.empty()) reg.dir_errors.push_back(error);
    for (const auto& name : names) {
      std::string path = dirs[p] + (dirs[p].empty() || dirs[p].back() == '/' ? "" : "/") + name;
      SpecFileResult r = load_file(path, static_cast<int>(p), wanted, cache);
      if (r.status == SpecFileResult::Status::failed) log::debug("cdi: spec file {} not loaded: {}", path, r.error);
      if (r.spec) {
        for (const Device& d : r.spec->devices) {
          auto& defs = best[r.spec->kind + "=" + d.name];
          if (!defs.empty() && defs.front().spec->priority < r.spec->priority) defs.clear();
          defs.push_back(DeviceRef{r.spec, &d});
        }
      }
      reg.files.push_back(std::move(r));
    }
  }
  for (auto& [name, defs] : best) {
    if (defs.size() == 1) {
      reg.devices.emplace(name, defs.front());
      continue;
    }
    auto& files = reg.conflicts[name];
    for (const auto& d : defs) files.push_back(d.spec->path);
  }
  return reg;
}

}  // namespace specshim::cdi
