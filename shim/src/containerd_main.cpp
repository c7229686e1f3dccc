// SPDX-License-Identifier: Apache-2.0
// specshim-containerd: the node installer (shim/src/containerd/), the
// program `specshim containerd` and packaging/install-on-host.sh run.
//   specshim-containerd configure|unconfigure|check [options]
#include <string>
#include <vector>

#include "verbs.h"

int main(int argc, char** argv) {
  std::vector<std::string> args = {"specshim", "containerd"};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return specshim::shim::containerd_main(args);
}
