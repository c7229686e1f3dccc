// SPDX-License-Identifier: Apache-2.0
// Capability names and this process's capabilities, through libcap.
#pragma once

#include <string>
#include <string_view>

namespace specshim::caps {

// canonical returns the OCI spelling ("CAP_IPC_LOCK") of a capability name
// given in any case. The name must carry the CAP_ prefix and be known to the
// running kernel (libcap's cap_max_bits), not just to libcap. Throws Error
// naming what is wrong otherwise.
std::string canonical(std::string_view name);

// kernel_last returns the OCI name of the highest capability the running
// kernel supports, for messages ("... the kernel knows up to CAP_X").
std::string kernel_last();

// Own is what this process holds of one capability.
struct Own {
  bool effective = false;
  bool permitted = false;
  bool bounding = false;
};

// own reports this process's state for a canonical capability name.
Own own(std::string_view canonical_name);

}  // namespace specshim::caps
