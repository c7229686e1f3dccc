// SPDX-License-Identifier: Apache-2.0
// Strict reading of specshim's TOML config. Every key a reader does not ask
// for is an error naming the file, the key and its line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specshim::config {

inline constexpr const char* kDefaultPath = "/etc/specshim/config.toml";

enum class Kind { none, string, integer, floating, boolean, array, table, other };

// Section is a strict reader over one TOML table. Reading a key marks it
// known; finish() throws for every key that was never read. Errors read
// "config `FILE`: line N: `passwd.home`: must be an absolute path".
class Section {
 public:
  Kind kind(std::string_view key) const;
  bool has(std::string_view key) const { return kind(key) != Kind::none; }

  std::optional<std::string> string(std::string_view key);
  std::optional<bool> boolean(std::string_view key);
  std::optional<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<std::vector<std::string>> strings(std::string_view key);
  std::optional<std::vector<std::int64_t>> integers(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<Section> table(std::string_view key);  // [key] or key = { ... }
  std::vector<Section> tables(std::string_view key);   // [[key]]
  // json returns any TOML value as JSON: tables keep their keys in file
  // order, non-negative integers become unsigned (as the JSON parser reads
  // them), and a date, time or non-finite float is an error.
  std::optional<nlohmann::ordered_json> json(std::string_view key);
  Section section(std::string_view key);  // table(key), or an empty table when absent
  std::vector<std::string> keys() const;  // in file order
  // only marks key read here and returns a reader over this same table that
  // sees nothing but key: how a modifier configured as a root-level array of
  // tables ([[name]]) gets its Section, reading the rules with tables(key).
  Section only(std::string_view key);

  // lists tells the factory of a modifier configured as a list ([[key]])
  // whether it got one: build_chain hands it a view of the root (see only)
  // when [[key]] is a list, and the [key] table otherwise, which must then
  // be empty ("write each <noun> as an array table, [[key]]").
  bool lists(std::string_view key, std::string_view noun);

  // where names key for a message: "`chain.order` (line 3)".
  std::string where(std::string_view key) const;

  // fail throws an Error located at key (or at the table itself when key is empty).
  [[noreturn]] void fail(std::string_view key, std::string_view message) const;
  // finish checks that every key was read; call once after reading.
  void finish() const;

  const std::string& path() const { return prefix_; }

 private:
  friend class Document;
  Section(std::shared_ptr<const void> doc, const void* table, std::string file, std::string prefix);
  const void* node(std::string_view key) const;
  std::string dotted(std::string_view key) const;  // "passwd.home"; the table's own name when key is empty
  void mark(std::string_view key);

  std::shared_ptr<const void> doc_;
  const void* table_;  // const toml::table*
  std::string file_;
  std::string prefix_;
  std::shared_ptr<std::vector<std::string>> used_;
  std::string only_;  // when set, the one key this reader sees
};

// Document is a parsed config file. A missing file is an empty document.
class Document {
 public:
  static Document load(const std::filesystem::path& file);
  static Document parse(std::string_view text, std::string file_name);
  Section root() const;
  const std::string& file() const { return file_; }
  bool exists() const { return exists_; }

 private:
  std::shared_ptr<const void> table_;
  std::string file_;
  bool exists_ = false;
};

// plain_name reports whether s names a rule ([[requirements]], [[patches]]):
// a letter or digit, then letters, digits, '-', '_' or '.'.
bool plain_name(std::string_view s);

// path_from_env returns $SPECSHIM_CONFIG or the default path.
std::filesystem::path path_from_env();

}  // namespace specshim::config
