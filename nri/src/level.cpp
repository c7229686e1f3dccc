// SPDX-License-Identifier: Apache-2.0
// Which NRI API a runtime speaks (adjust.h, level_of).
#include <array>
#include <cstdio>

#include "specshim/nri/adjust.h"

namespace specshim::nri {
namespace {

struct Release {
  const char* runtime;  // ConfigureRequest.runtime_name
  int major, minor, patch;
  int nri_minor;  // the NRI it vendors, from this release on
};

// kReleases: what each runtime release vendors (go.mod), newest first per
// runtime (docs/nri.md, "Runtimes"). containerd 2.0 and 2.1 vendor NRI
// v0.8.0, 2.2.0 v0.10.0, 2.2.1 v0.11.0, 2.3 v0.12.0; CRI-O 1.34 v0.10.0,
// 1.35 v0.11.0.
constexpr std::array kReleases = {
    Release{"containerd", 2, 3, 0, 12}, Release{"containerd", 2, 2, 1, 11}, Release{"containerd", 2, 2, 0, 10},
    Release{"containerd", 2, 0, 0, 8},  Release{"containerd", 1, 7, 29, 8}, Release{"containerd", 1, 7, 20, 6},
    Release{"containerd", 1, 7, 7, 4},  Release{"containerd", 1, 7, 0, 3},  Release{"cri-o", 1, 35, 0, 11},
    Release{"cri-o", 1, 34, 0, 10},     Release{"cri-o", 1, 32, 0, 9},      Release{"cri-o", 1, 30, 0, 6},
};

// version reads "2.1.9", "v2.1.9+unknown", "1.7.29-1": missing parts are 0.
std::array<int, 3> version(const std::string& text) {
  std::array<int, 3> v{0, 0, 0};
  const char* p = text.c_str();
  if (*p == 'v') ++p;
  std::sscanf(p, "%d.%d.%d", &v[0], &v[1], &v[2]);
  return v;
}

}  // namespace

Level level_of(const api::ConfigureRequest& req) {
  Level level;
  level.runtime = req.runtime_name() + " " + req.runtime_version();
  if (!req.nri_version().empty()) {
    level.nri_minor = version(req.nri_version())[1];
    return level;
  }
  auto v = version(req.runtime_version());
  for (const Release& r : kReleases) {
    if (req.runtime_name() != r.runtime) continue;
    if (std::array{r.major, r.minor, r.patch} <= v) {
      level.nri_minor = r.nri_minor;
      return level;
    }
  }
  return level;  // unknown: v0.8
}

}  // namespace specshim::nri
