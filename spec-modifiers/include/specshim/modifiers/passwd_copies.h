// SPDX-License-Identifier: Apache-2.0
// The passwd modifier's two copies, for a front-end that mounts them before
// it can see the image (specshim-nri: NRI shows no rootfs). It mounts an
// empty file of its own over each database when it asks the runtime for the
// container, and an OCI createRuntime hook (`specshim nri-hook`) fills them
// in place once the bundle and rootfs exist, before the process starts: with
// what the modifier makes of the real spec and the image's files, or the
// image's own file's content where the modifier leaves the container alone.
// A copy is always mode 0644 and root's (the modifier's, in a user namespace,
// container root's): never the image's mode or owner.
#pragma once

#include <filesystem>
#include <string_view>

#include "specshim/base/config.h"
#include "specshim/base/spec.h"

namespace specshim::passwd {

// Copy is one database the modifier manages: where the container sees it,
// and the fixed name of specshim's copy in the bundle (or front-end's dir).
struct Copy {
  std::string_view path;
  std::string_view bundle_name;
};
inline constexpr Copy kPasswdCopy{"/etc/passwd", "specshim-passwd"};
inline constexpr Copy kGroupCopy{"/etc/group", "specshim-group"};
inline constexpr Copy kCopies[] = {kPasswdCopy, kGroupCopy};
// kCopyMountOptions: how a copy is mounted over the image's file.
inline constexpr const char* kCopyMountOptions[] = {"rbind", "ro", "nosuid", "nodev", "noexec", "rprivate"};

// mount_over returns the spec's mount that hides f (at its path or a parent
// of it, "/etc" say), or nullptr: then nothing covers the image's file.
const Json* mount_over(const Spec& spec, const Copy& f);

// fill_copies writes both copies in dir, each a regular file that exists
// already (made empty by the front-end and bind-mounted, so it is written
// in place: the mount holds the inode). spec is the container's config.json
// as the runtime got it, bundle its directory; passwd_table is [passwd] of
// the config, opt_out its [policy] opt-out-annotation (read_opt_out_annotation).
// The spec's mounts of dir's copies are the front-end's and are not the
// image's: the modifier reads the image's files under root.path. Throws
// Error naming the file and the cause.
void fill_copies(config::Section& passwd_table, std::string_view opt_out, Spec spec,
                 const std::filesystem::path& bundle, const std::filesystem::path& dir);

}  // namespace specshim::passwd
