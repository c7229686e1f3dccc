// SPDX-License-Identifier: Apache-2.0
// The parse cache of CDI spec files: what parse_spec made of a spec file's
// bytes, kept in a root-only directory so the next create reads it back
// instead of parsing and decoding the file again (NVIDIA's generated YAML
// spec costs ~3 M instructions to parse, decode and validate; reading it back
// ~0.1 M). See docs/cdi.md, "The parse cache".
//
// An entry is found by a hash of the file's bytes and used only when it holds
// exactly those bytes and was written by this very build of specshim (its
// ELF build ID): a spec file that changed in any way, however fast and
// whatever its timestamps say, is parsed again. Anything doubtful (no such
// entry, an entry that is short, foreign, not ours, or not a regular file, a
// directory that is not root-only) means: parse the file. A file that failed
// to parse is stored too, with the message of its error: until its bytes
// change, the next create reports that same error without parsing it again.
// The cache never makes a create fail that would not fail without it.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "specshim/base/fs.h"
#include "specshim/node/cdi.h"

namespace specshim::cdi {

inline constexpr const char* kDefaultCacheDir = "/run/specshim/cdi-cache";
// The oldest entries go when a write finds more than this many.
inline constexpr std::size_t kMaxCacheEntries = 64;
// One create stores at most this many entries: a create that must parse
// more files than the cache holds (spec dirs full of files that all match)
// parses them as without a cache instead of rewriting it each time.
inline constexpr std::size_t kMaxStoresPerCreate = 8;

class ParseCache {
 public:
  // dir is opened, and created 0700 with its parent when missing, on the
  // first parse: a create without CDI requests never touches it.
  explicit ParseCache(std::filesystem::path dir);

  // parse returns what parse_spec(text, path) returns, from the cache when it
  // holds an entry for exactly text; otherwise it parses and stores the
  // result, the spec or its Error's message (at most kMaxStoresPerCreate
  // times per ParseCache). Throws what parse_spec throws; for a failure the
  // cache holds, an Error with the message describe() gave the first one.
  SpecFile parse(std::string_view text, const std::string& path) const;

  // read_only: look entries up but store none and create no directory
  // (dry-run writes nothing).
  void read_only(bool on) { read_only_ = on; }

  const std::filesystem::path& dir() const { return dir_; }
  // What the last parse did: "hit", "stored", "parsed (cache: <why not>)".
  const std::string& last() const { return last_; }

 private:
  bool open_dir() const;
  bool may_store(const std::string& why) const;
  void store(const std::string& name, const std::string& encoded) const;

  std::filesystem::path dir_;
  mutable fs::Fd fd_;
  mutable bool tried_ = false;
  mutable std::string why_off_;
  mutable std::string last_;
  mutable std::size_t stores_ = 0;
  bool read_only_ = false;
};

// usable_cache_dir reports whether st (of the cache dir itself, not
// followed) is a directory of owner closed to group and others: the only
// kind a create uses. doctor asks it for root, as containerd runs creates.
bool usable_cache_dir(const struct stat& st, uid_t owner);

// build_id is this binary's ELF build ID in hex ("" when it has none: then
// nothing is cached). An entry from another build is never used.
const std::string& build_id();

// entry_name is the file name of text's entry for a build: 16 hex digits and
// ".cdi".
std::string entry_name(std::string_view text, std::string_view build);

// ParseFailure is what parse_spec threw for some bytes: its Error's message
// (describe(), the whole chain).
struct ParseFailure {
  std::string error;
  bool operator==(const ParseFailure&) const = default;
};
// Parsed is what an entry holds: the spec parse_spec returned, or its failure.
using Parsed = std::variant<SpecFile, ParseFailure>;

// encode_entry serialises spec (parsed from text; its path and priority are
// not kept), or the failure parsing text ended in, with text and build.
// decode_entry returns the spec or the failure back when entry is such a
// serialisation of exactly this text and build, and nullopt for anything
// else, whatever its bytes (fuzzed: test/fuzz/fuzz_cdi_cache.cpp).
std::string encode_entry(std::string_view text, std::string_view build, const SpecFile& spec);
std::string encode_entry(std::string_view text, std::string_view build, const ParseFailure& failure);
// entry_header is how every entry for text and build starts: a byte follows,
// 1 and the spec or 0 and the failure.
std::string entry_header(std::string_view text, std::string_view build);
std::optional<Parsed> decode_entry(std::string_view entry, std::string_view text, std::string_view build);

}  // namespace specshim::cdi
