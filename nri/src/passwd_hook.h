// SPDX-License-Identifier: Apache-2.0
// passwd without a rootfs ([nri] passwd-hook): the plugin mounts empty copies
// of /etc/passwd and /etc/group from the container's state directory and
// adds a createRuntime hook, `specshim nri-hook`, that fills them from the
// bundle and rootfs before the process starts (specshim/modifiers/passwd_copies.h).
#pragma once

#include <filesystem>
#include <string>

#include "api.pb.h"
#include "specshim/base/spec.h"
#include "specshim/modifiers/config_file.h"

namespace specshim::nri {

namespace api = ::nri::pkg::api::v1alpha1;

// add_passwd_copies makes dir with the two empty copies and adds their
// mounts and the hook to adj; config_file is what the hook reads. Returns
// false, adding nothing, when the view mounts something over /etc/passwd or
// /etc/group already (a ConfigMap, say): the pod's mount stays.
bool add_passwd_copies(const Spec& view, const std::filesystem::path& dir, const NriSettings& nri,
                       const std::string& config_file, api::ContainerAdjustment& adj);

}  // namespace specshim::nri
