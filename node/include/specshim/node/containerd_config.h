// SPDX-License-Identifier: Apache-2.0
// containerd's configuration as one model for every reader and writer of it
// (doctor's containerd check, `specshim containerd configure|unconfigure|check`):
// a line scanner for its TOML (what line holds which table or key), a file's
// version and `imports`, the order containerd loads imports in, the CRI
// plugin's name per config version, and how a key merges over the loaded
// files per containerd release line.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specshim::node::containerd_config {

namespace fs = std::filesystem;

// ---- the line scanner ------------------------------------------------------

// Kind is what a scanned line holds: a [table] header, an [[array]] header,
// a key/value, or something the scanner cannot read.
enum class Kind { table, array, kv, bad };

// Record is one table header or key/value line. table and key are canonical:
// each key segment double-quoted, joined by dots (runc, "runc" and 'runc' are
// all "runc"); value is the raw text up to a comment (for a value spanning
// lines, its first line), trailing blanks left out.
struct Record {
  int line = 0;  // 1-based
  Kind kind = Kind::bad;
  std::string table;
  std::string key;
  int segments = 0;
  std::string value;
};

// lines splits text as awk reads records: on \n, a last line without a final
// newline included, no empty record after a final newline.
std::vector<std::string> lines(std::string_view text);

// scan reads text line by line as TOML's strings, literal strings,
// multi-line strings, arrays over lines and comments need; a line in a
// multi-line value gives no record. A CR before a line's \n is ignored.
std::vector<Record> scan(std::string_view text);

// toml_string is the value of a one-line TOML string without escapes
// ("..." or '...'); nullopt for anything else.
std::optional<std::string> toml_string(std::string_view raw);

// under: canonical path a is b or inside it. above: a is a table that holds
// b (the top level, "", holds everything).
bool under(std::string_view a, std::string_view b);
bool above(std::string_view a, std::string_view b);

// ---- a file's top level ------------------------------------------------------

// file_version is the digits of the top-level `version = N` ("" when there is
// none: containerd reads such a file as version 1), as the text says them.
std::string file_version(std::string_view text);

// imports_line is the first top-level `imports = ...` line, if any.
std::optional<std::string> imports_line(std::string_view text);

// import_entries are the entries of the top-level `imports`, in order (a
// list over lines read up to the line with its `]`; a # starts a comment).
std::vector<std::string> import_entries(std::string_view text);

// ---- names per config version ------------------------------------------------

// cri_plugin is the CRI runtime plugin of a config version: "cri" in 1,
// io.containerd.grpc.v1.cri in 2, io.containerd.cri.v1.runtime from 3 on.
std::string cri_plugin(int version);

// HandlerPaths are a runtime handler's canonical paths in a config version:
// the CRI plugin's table, the handler's, its options', and the handler's
// table as it is written in a header.
struct HandlerPaths {
  std::string cri;
  std::string handler;
  std::string options;
  std::string table;
};
HandlerPaths handler_paths(int version, const std::string& handler);

// config_version_of_release: the config version a containerd release writes
// ("1.7.13" -> 2, "2.0"-"2.2" -> 3, "2.3" and later -> 4); nullopt when the
// release is not 1.x or 2.x.
std::optional<int> config_version_of_release(std::string_view release);

// ---- paths and globs -----------------------------------------------------------

// dirname is coreutils' dirname of a path ("." when it has no slash).
std::string dirname(std::string_view path);

// same_file tells whether two paths name one file (device and inode).
bool same_file(const fs::path& a, const fs::path& b);

// expand lists the paths a glob pattern matches, in glob(3)'s order.
std::vector<fs::path> expand(const fs::path& pattern);

// glob_sorted lists what a pattern matches (directories included), sorted by
// bytes as Go's filepath.Glob returns them.
std::vector<std::string> glob_sorted(const std::string& pattern);

// name_matches: a file name matches the last element of an imports entry,
// as a glob.
bool name_matches(const std::string& pattern, const std::string& name);

// clean_dir is a spec dir as containerd and specshim would open it:
// lexically cleaned, and /var/run as /run (a symlink to it on every
// systemd distribution).
std::string clean_dir(const std::string& dir);

// ---- merging -------------------------------------------------------------------

// Line is a containerd release line: how it merges imported files, and its defaults.
enum class Line { v1_6, v1_7, v2, unknown };

// Setting is one key of a file's CRI table: its value, where it is set.
template <typename T>
struct Setting {
  std::optional<T> value;
  std::string at;  // "FILE line N"
};

// merged is the value a key of the CRI table has once containerd has read
// every file it loads (files in load order, each with `loaded` and
// `has_cri`). 1.x: an imported file replaces each plugin table it names,
// whole, so the last file with a CRI table decides (without the key: the
// default); 2.x merges imported files key by key, so the last file that sets
// it does.
template <typename Files, typename F, typename T>
Setting<T> merged(const Files& files, Line line, Setting<T> F::*key) {
  Setting<T> out;
  for (const auto& f : files)
    if (f.loaded && (line != Line::v2 ? f.has_cri : (f.*key).value.has_value())) out = f.*key;
  return out;
}

}  // namespace specshim::node::containerd_config
