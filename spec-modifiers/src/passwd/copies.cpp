// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/base/log.h"
#include "specshim/modifiers/chain.h"
#include "specshim/modifiers/factories.h"
#include "specshim/modifiers/passwd_copies.h"

namespace specshim::passwd {
namespace {

constexpr std::size_t kMaxFileBytes = 10 << 20;  // as the modifier reads the image's files

// kCopyMode: every copy is the host's file of a database anyone may read,
// whatever mode the image gave its own (a setuid or world-writable
// /etc/passwd stays the image's business, not the host's).
constexpr mode_t kCopyMode = 0644;

// write_in_place replaces the content of dir/name, a regular file that must
// exist, keeping its inode (a mount of it sees the new content). It is
// owner's (root when unset) and kCopyMode before it holds any content.
void write_in_place(const std::filesystem::path& dir, std::string_view name, const std::string& content,
                    const std::optional<FileOwner>& owner) {
  std::filesystem::path path = dir / name;
  fs::Fd fd(::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) throw_errno("open `" + path.string() + "`");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat `" + path.string() + "`");
  if (!S_ISREG(st.st_mode)) throw Error("`" + path.string() + "` is not a regular file");
  if (::ftruncate(fd.get(), 0) != 0) throw_errno("truncate `" + path.string() + "`");
  if (::fchown(fd.get(), owner ? owner->uid : 0, owner ? owner->gid : 0) != 0)
    throw_errno("chown `" + path.string() + "`");
  if (::fchmod(fd.get(), kCopyMode) != 0) throw_errno("chmod `" + path.string() + "`");
  for (std::size_t done = 0; done < content.size();) {
    ssize_t n = ::pwrite(fd.get(), content.data() + done, content.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("write `" + path.string() + "`");
    done += static_cast<std::size_t>(n);
  }
}

// ours reports whether mount m is the front-end's mount of a copy in dir.
bool ours(const Json& m, const std::filesystem::path& dir) {
  if (!m.is_object() || !m.contains("source") || !m["source"].is_string()) return false;
  std::filesystem::path source = m["source"].get<std::string>();
  for (const Copy& c : kCopies)
    if (source == dir / c.bundle_name) return true;
  return false;
}

// covers reports whether a mount at destination hides target: the same path
// or one of its parents, compared after lexical cleaning ("//etc/./passwd",
// "/etc/"). A relative destination is read from "/", as runc does.
bool covers(const std::string& destination, std::string_view target) {
  std::string d = (std::filesystem::path("/") / destination).lexically_normal().string();
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  if (d == "/" || d == target) return true;
  return target.size() > d.size() && target.compare(0, d.size(), d) == 0 && target[d.size()] == '/';
}

}  // namespace

const Json* mount_over(const Spec& spec, const Copy& f) {
  const Json* mounts = spec.find({"mounts"});
  if (!mounts || !mounts->is_array()) return nullptr;
  for (const auto& m : *mounts)
    if (m.is_object() && m.contains("destination") && m["destination"].is_string() &&
        covers(m["destination"].get<std::string>(), f.path))
      return &m;
  return nullptr;
}

void fill_copies(config::Section& passwd_table, std::string_view opt_out, Spec spec,
                 const std::filesystem::path& bundle, const std::filesystem::path& dir) {
  // The modifier reads the image's files below root.path and mounts its
  // copies from ctx.bundle: the spec it sees has root.path made absolute and
  // the front-end's mounts taken out, as if nothing had been mounted yet.
  Json& j = spec.json();
  if (Json* mounts = j.contains("mounts") ? &j["mounts"] : nullptr; mounts && mounts->is_array()) {
    Json kept = Json::array();
    for (auto& m : *mounts)
      if (!ours(m, dir)) kept.push_back(m);
    *mounts = std::move(kept);
  }
  std::filesystem::path rootfs;
  if (j.contains("root") && j["root"].is_object() && j["root"].contains("path") && j["root"]["path"].is_string()) {
    rootfs = bundle / j["root"]["path"].get<std::string>();  // an absolute path stays as it is
    j["root"]["path"] = rootfs.string();
  }
  if (rootfs.empty()) throw Error("the container's spec has no root.path");

  Context ctx;
  ctx.bundle = dir;
  ChainPlan plan;  // of the plan, passwd's factory reads the opt-out alone
  plan.opt_out = opt_out;
  if (auto m = make_passwd(passwd_table, plan)) {
    std::vector<std::unique_ptr<Modifier>> one;
    one.push_back(std::move(m));
    Chain(std::move(one)).run(spec, ctx);
  }
  for (const Copy& c : kCopies) {
    auto made = ctx.bundle_files.find(std::string(c.bundle_name));
    if (made != ctx.bundle_files.end()) {
      // The modifier's copy: host root's, or container root's in a user
      // namespace (so the container sees it as root's).
      write_in_place(dir, c.bundle_name, made->second.content, made->second.owner);
      continue;
    }
    // Left alone: the copy holds the image's own file, as the process would
    // have read it (an image without one: an empty file), but is host root's
    // and kCopyMode: the image's owner and mode are not the host's to keep.
    auto image = fs::read_file_in_root(rootfs, c.path, kMaxFileBytes);
    log::debug("passwd: {} is the image's own content", c.path);
    write_in_place(dir, c.bundle_name, image ? image->content : std::string(), std::nullopt);
  }
}

}  // namespace specshim::passwd
