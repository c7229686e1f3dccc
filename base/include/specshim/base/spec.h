// SPDX-License-Identifier: Apache-2.0
// Spec is an OCI runtime spec (config.json) held as a lossless JSON DOM.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "specshim/base/error.h"

namespace specshim {

// Json keeps object keys in document order, so unknown fields and their order
// survive a rewrite.
using Json = nlohmann::ordered_json;

// json_field reads j[key] as T (for specshim's own JSON files: records,
// grants). Throws Error "where: missing `key`" or "where: `key`: <cause>".
template <typename T>
T json_field(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw Error(where + ": missing `" + key + "`");
  try {
    return j.at(key).template get<T>();
  } catch (const std::exception& e) {
    throw Error(where + ": `" + key + "`: " + json_cause(e));
  }
}

// kMaxSpecBytes caps a config.json read from disk.
inline constexpr std::size_t kMaxSpecBytes = 16 << 20;

// kMaxJsonDepth bounds how deeply JSON specshim reads may nest arrays and
// objects: the DOM's copy, comparison and dump recurse once per level. OCI
// specs nest about six levels.
inline constexpr int kMaxJsonDepth = 512;

// check_json_depth throws Error "what: nested deeper than <max> levels" when
// text, read as JSON, opens more than max arrays and objects at once
// (brackets inside strings do not count). It only scans: malformed text is
// the parser's to refuse.
void check_json_depth(std::string_view text, std::string_view what, int max = kMaxJsonDepth);

// parse_json reads JSON text that comes from outside specshim (an
// annotation's value, a file, a program's output) with nlohmann's strict
// parser, after check_json_depth. Throws Error "what: <cause>"; with
// allow_exceptions false, malformed text gives a discarded value instead
// (is_discarded()), but too deep a nesting still throws.
Json parse_json(std::string_view text, std::string_view what, bool allow_exceptions = true);

// shown_json shows a JSON value in a message: a string as shown() does, any
// other value as compact JSON (invalid UTF-8 replaced). Text over max bytes
// is cut to max - 3 (never half a character) and "...". Only what is kept
// is written, so a value of any depth or size is safe to show.
std::string shown_json(const Json& j, std::size_t max = 120);

// Spec owns the parsed document plus what is needed to write it back the way
// it came: the indentation style and the exact text of any number whose
// canonical form differs from the input (1e3, 1.50, 18446744073709551616).
// Modifiers edit json() directly; serialize() restores the original number
// texts wherever the value at that place is still the same number.
class Spec {
 public:
  // parse reads a JSON document. Throws Error naming line and column.
  static Spec parse(std::string_view text);

  Json& json() {
    touch();
    return doc_;
  }
  const Json& json() const { return doc_; }

  // serialize writes the document in the input's style (compact, or the
  // input's indentation), ending in a newline if the input did.
  std::string serialize() const;

  // annotation returns annotations[key] when it is a string.
  std::optional<std::string> annotation(std::string_view key) const;
  // env returns the value of the last `key=` entry of process.env: the one
  // the process gets (runc and NVIDIA's toolkit read it so). With counts,
  // the last entry whose value counts is taken instead (an Ascend list
  // skips a blank last entry).
  std::optional<std::string> env(std::string_view key, bool (*counts)(std::string_view value) = nullptr) const;

  // Small typed accessors for the places many modifiers touch. They create
  // intermediate objects/arrays on demand and throw Error when an existing
  // value has the wrong JSON type. Objects keep insertion order in a vector:
  // creating a member moves its siblings, so a reference returned earlier
  // into the same object dangles after a call that creates one. Look a
  // value up again after any call that may create its sibling.
  Json& object_at(std::initializer_list<std::string_view> path);
  Json& array_at(std::initializer_list<std::string_view> path);
  const Json* find(std::initializer_list<std::string_view> path) const;

  // A watch lets the chain compare only what a modifier may have changed:
  // after watch(), the first non-const access (json(), object_at, array_at)
  // first copies the document as it is. watched() ends the watch and returns
  // that copy, or nullopt when there was no such access, so no change.
  void watch() {
    watching_ = true;
    snapshot_.reset();
  }
  std::optional<Json> watched() {
    watching_ = false;
    return std::exchange(snapshot_, std::nullopt);
  }

 private:
  void touch() {
    if (watching_ && !snapshot_) snapshot_.emplace(doc_);
  }

  Json doc_;
  bool watching_ = false;
  std::optional<Json> snapshot_;
  int indent_ = -1;  // -1: compact
  char indent_char_ = ' ';
  bool trailing_newline_ = false;
  std::map<std::string, std::string> raw_numbers_;  // JSON pointer -> input text
  friend class SpecWriter;
};

}  // namespace specshim
