// SPDX-License-Identifier: Apache-2.0
// Test helpers: temporary directories and small file utilities.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace specshim::test {

// TempDir is a fresh directory under $TMPDIR (or /tmp), or under base,
// removed with its contents when the object goes away.
class TempDir {
 public:
  TempDir();
  explicit TempDir(const std::filesystem::path& base);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view p) const { return path_ / p; }

 private:
  std::filesystem::path path_;
};

std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, std::string_view content, unsigned mode = 0644);
// kShippedConfig is packaging/specshim.toml, the config the .deb installs as
// its conffile /etc/specshim/config.toml and install-on-host.sh copies there.
inline constexpr const char* kShippedConfig = SPECSHIM_TEST_DATA_DIR "/../packaging/specshim.toml";

// replace_all returns s with every `from` replaced by `to`.
std::string replace_all(std::string s, std::string_view from, std::string_view to);

}  // namespace specshim::test
