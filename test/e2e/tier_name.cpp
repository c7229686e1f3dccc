// SPDX-License-Identifier: Apache-2.0
// Compiled once per e2e binary with E2E_TIER set to the containerd it drives
// and E2E_DELEGATE to the runtime specshim delegates to.
#include "containerd_harness.h"

const char* specshim::e2e::tier_name() {
  return E2E_TIER;
}

const char* specshim::e2e::delegate_name() {
  return E2E_DELEGATE;
}
