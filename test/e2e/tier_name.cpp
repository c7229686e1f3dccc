// SPDX-License-Identifier: Apache-2.0
// Compiled once per e2e binary with E2E_TIER set to the containerd it drives.
#include "containerd_harness.h"

const char* specshim::e2e::tier_name() {
  return E2E_TIER;
}
