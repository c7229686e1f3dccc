// SPDX-License-Identifier: Apache-2.0
#include "passwd_hook.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "specshim/base/error.h"
#include "specshim/base/fs.h"
#include "specshim/modifiers/create.h"
#include "specshim/modifiers/passwd_copies.h"

namespace specshim::nri {

bool add_passwd_copies(const Spec& view, const std::filesystem::path& dir, const NriSettings& nri,
                       const std::string& config_file, api::ContainerAdjustment& adj) {
  for (const auto& c : passwd::kCopies)
    if (passwd::mount_over(view, c)) return false;

  create::make_files_dir(dir);
  for (const auto& c : passwd::kCopies) {
    std::filesystem::path file = dir / c.bundle_name;
    fs::Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!fd) throw_errno("make `" + file.string() + "`");
    auto* m = adj.add_mounts();
    m->set_destination(std::string(c.path));
    m->set_type("bind");
    m->set_source(file.string());
    for (const char* o : passwd::kCopyMountOptions) m->add_options(o);
  }
  api::Hook* hook = adj.mutable_hooks()->add_create_runtime();
  hook->set_path(nri.hook_binary);
  for (const std::string& a : {std::string("specshim"), std::string("nri-hook"), std::string("--state-dir"),
                               nri.state_dir, std::string("--config"), config_file})
    hook->add_args(a);
  return true;
}

}  // namespace specshim::nri
