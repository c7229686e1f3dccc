// SPDX-License-Identifier: Apache-2.0
// Files and byte-exact edits: every change of a node file goes through a
// temp file in its directory and a rename, keeps the old file's mode, and
// leaves every byte it does not edit (a missing final newline, CRs) as it was.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <filesystem>

#include "containerd/install.h"
#include "specshim/base/fs.h"

namespace specshim::shim::containerd {

namespace {

constexpr std::size_t kMaxFile = 256u << 20;

// Piece is one line of a file with its terminator.
std::vector<std::string> pieces(const std::string& content) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < content.size()) {
    auto nl = content.find('\n', start);
    std::size_t end = nl == std::string::npos ? content.size() : nl + 1;
    out.push_back(content.substr(start, end - start));
    start = end;
  }
  return out;
}

int newlines(const std::string& content) {
  int n = 0;
  for (char c : content) n += c == '\n';
  return n;
}

std::string join_from(const std::vector<std::string>& p, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to && i < p.size(); ++i) out += p[i];
  return out;
}

std::string bare(const std::string& piece) {
  return !piece.empty() && piece.back() == '\n' ? piece.substr(0, piece.size() - 1) : piece;
}

}  // namespace

std::optional<std::string> read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return specshim::fs::read_regular_file(path, kMaxFile);
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw_errno("stat " + q(path));
  return st.st_mode & 07777;
}

void mkdirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("mkdir " + q(dir) + ": " + ec.message());
}

void replace_file(const std::string& target, const std::string& content, mode_t mode) {
  std::string dir = cc::dirname(target);
  mkdirs(dir);
  std::string name = target.substr(target.rfind('/') + 1);
  specshim::fs::write_file_atomic(dir, name, content, mode, specshim::fs::TempFile::named);
  // write_file_atomic's mode passes the umask; chmod says it exactly.
  if (::chmod(target.c_str(), mode) != 0) throw_errno("chmod " + q(target));
}

void rewrite(const std::string& target, const std::string& content) {
  replace_file(target, content, mode_of(target));
}

void backup(Run& run, const std::string& file) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  struct tm tm {};
  ::gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  std::string to = file + ".specshim-backup." + stamp;
  if (run.dry) return;
  if (!exists(to)) run.backups.push_back(to);
  auto content = read_file(file);
  if (!content) throw Error("back up " + q(file) + ": not a regular file");
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) throw_errno("stat " + q(file));
  replace_file(to, *content, st.st_mode & 07777);
  if (::lchown(to.c_str(), st.st_uid, st.st_gid) != 0 && errno != EPERM) throw_errno("chown " + q(to));
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  ::utimensat(AT_FDCWD, to.c_str(), times, 0);
  run.log("backed up " + run.strip_root(file) + " to " + run.strip_root(file) + ".specshim-backup." + stamp);
}

bool ends_with_newline(const std::string& content) {
  return content.empty() || content.back() == '\n';
}

bool has_line(const std::string& content, const std::string& line) {
  for (const auto& l : cc::lines(content))
    if (l == line) return true;
  return false;
}

std::string line_at(const std::string& content, int n) {
  auto p = pieces(content);
  return n >= 1 && static_cast<std::size_t>(n) <= p.size() ? bare(p[n - 1]) : "";
}

std::string replace_line(const std::string& content, int n, const std::string& text) {
  auto p = pieces(content);
  std::string out = join_from(p, 0, n - 1) + text;
  if (n <= newlines(content)) out += "\n";
  return out + join_from(p, n, p.size());
}

std::string insert_after(const std::string& content, int n, const std::string& text) {
  auto p = pieces(content);
  if (n <= newlines(content)) return join_from(p, 0, n) + text + "\n" + join_from(p, n, p.size());
  return content + "\n" + text;
}

std::string delete_line(const std::string& content, int n) {
  auto p = pieces(content);
  if (n <= newlines(content)) return join_from(p, 0, n - 1) + join_from(p, n, p.size());
  std::string head = join_from(p, 0, n - 1);
  if (!head.empty()) head.pop_back();
  return head;
}

Block split_block(const std::string& content) {
  Block b;
  bool in = false;
  for (const auto& piece : pieces(content)) {
    std::string line = bare(piece);
    if (!in && line == kBeginMark) {
      in = true;
      b.inside += piece;
      continue;
    }
    (in ? b.inside : b.outside) += piece;
    if (in && line == kEndMark) in = false;
  }
  return b;
}

std::string remove_block(const Run& run, const std::string& cfg, const std::string& content) {
  std::optional<std::size_t> start, end;
  std::size_t offset = 0;
  for (const auto& piece : pieces(content)) {
    std::string line = bare(piece);
    if (!start && line == kBeginMark) start = offset;
    if (!end && line == kEndMark) end = offset;
    offset += piece.size();
  }
  if (!start || !end || *end <= *start)
    throw Error(run.strip_root(cfg) + ": specshim's markers are damaged; remove the block by hand");
  std::size_t after = *end + std::string(kEndMark).size() + 1;
  return content.substr(0, *start) + (after < content.size() ? content.substr(after) : "");
}

}  // namespace specshim::shim::containerd
