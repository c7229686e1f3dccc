// SPDX-License-Identifier: Apache-2.0
// Fuzzes the passwd modifier on an image-controlled /etc/passwd and
// /etc/group (the input, split at the first NUL): the line parsers must
// round-trip what they accept, and the generated files must keep the
// image's bytes and add exactly one line each.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "specshim/base/error.h"
#include "specshim/modifiers/passwd.h"

namespace {
namespace fs = std::filesystem;
using namespace specshim;

constexpr std::uint32_t kUid = 4242;
constexpr std::uint32_t kGid = 4343;

fs::path scratch_bundle() {
  static const fs::path dir = [] {
    fs::path d = fuzz::make_scratch("passwd", {"rootfs/etc"});
    std::ofstream(d / "config.json")
        << R"({"ociVersion":"1.0.2","process":{"user":{"uid":)" << kUid << R"(,"gid":)" << kGid
        << R"(},"args":["sh"],"cwd":"/","env":["HOME=/home/app"]},"root":{"path":"rootfs"},"mounts":[]})";
    return d;
  }();
  return dir;
}

std::size_t lines(std::string_view s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

bool clean(std::initializer_list<std::string_view> fields) {
  return std::none_of(fields.begin(), fields.end(), [](std::string_view f) { return passwd::field_problem(f); });
}

// Every line the parsers accept is present by its id, and one whose fields
// could be written (format_* requires field_problem-clean fields) formats
// back to a line that parses to the same entry.
void check_round_trip(std::string_view file) {
  std::size_t start = 0;
  while (start < file.size()) {
    std::size_t end = file.find('\n', start);
    if (end == std::string_view::npos) end = file.size();
    std::string_view line = file.substr(start, end - start);
    if (auto e = passwd::parse_passwd_line(line)) {
      if (!passwd::has_uid(file, e->uid)) std::abort();
      if (clean({e->name, e->password, e->gecos, e->home, e->shell})) {
        auto again = passwd::parse_passwd_line(passwd::format_passwd_line(*e));
        if (!again || again->uid != e->uid || again->name != e->name || again->shell != e->shell) std::abort();
      }
    }
    if (auto g = passwd::parse_group_line(line)) {
      if (!passwd::has_gid(file, g->gid)) std::abort();
      if (clean({g->name, g->password, g->members})) {
        auto again = passwd::parse_group_line(passwd::format_group_line(*g));
        if (!again || again->gid != g->gid || again->members != g->members) std::abort();
      }
    }
    start = end + 1;
  }
}

// A generated file is the image's bytes, a newline if they lacked one, and
// exactly one canonical line for the id.
void check_generated(const Context& ctx, std::string_view name, std::string_view image, bool is_passwd) {
  auto it = ctx.bundle_files.find(std::string(name));
  if (it == ctx.bundle_files.end()) return;
  const std::string& out = it->second.content;
  if (out.compare(0, image.size(), image) != 0) std::abort();
  std::string_view added = std::string_view(out).substr(image.size());
  if (!image.empty() && image.back() != '\n') {
    if (added.empty() || added.front() != '\n') std::abort();
    added.remove_prefix(1);
  }
  if (lines(added) != 1 || added.back() != '\n') std::abort();
  added.remove_suffix(1);
  if (is_passwd ? !passwd::parse_passwd_line(added) : !passwd::parse_group_line(added)) std::abort();
  if (is_passwd ? !passwd::has_uid(out, kUid) : !passwd::has_gid(out, kGid)) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::size_t nul = input.find('\0');
  std::string_view passwd_file = input.substr(0, nul);
  std::string_view group_file = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  check_round_trip(passwd_file);
  check_round_trip(group_file);

  auto bundle = scratch_bundle();
  fuzz::write_bytes(bundle / "rootfs/etc/passwd", passwd_file);
  fuzz::write_bytes(bundle / "rootfs/etc/group", group_file);
  try {
    auto out = fuzz::dry_run(bundle, "[chain]\norder = [\"passwd\"]\n");
    check_generated(out.ctx, "specshim-passwd", passwd_file, true);
    check_generated(out.ctx, "specshim-group", group_file, false);
  } catch (const Error&) {
  }
  return 0;
}
