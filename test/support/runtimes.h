// SPDX-License-Identifier: Apache-2.0
// The OCI runtimes the tests run: Debian 12's runc 1.1.5, and runc 1.3 and
// crun 1.28 from Debian sid (scripts/fetch-runtimes.sh), for the e2e
// delegate tiers (test/e2e/containerd_harness.cpp) and the integration tests
// that run a runtime directly.
#pragma once

#include <filesystem>
#include <string>

namespace specshim::test {

// cache_dir is where scripts/fetch-containerd.sh and fetch-runtimes.sh unpack
// what they download: $SPECSHIM_CONTAINERD_CACHE, or /var/cache/specshim-test.
std::string cache_dir();

// runtime_binary is the binary of runtime `name`: "runc-1.1" (the system's,
// /usr/sbin/runc), "runc-1.3" or "crun" ($SPECSHIM_RUNC_1_3 / $SPECSHIM_CRUN,
// or cache_dir()/runtime-<name>/ as fetch-runtimes.sh unpacks them). Throws
// std::runtime_error, its message starting with `who` and saying how to get
// the runtime, when that is not an executable: a test never skips for want
// of one.
std::filesystem::path runtime_binary(const std::string& name, const std::string& who);

// free_cgroup2_controllers: crun refuses a cgroup v1 hybrid host whose
// cgroup2 hierarchy (/sys/fs/cgroup/unified) still holds a controller ("cgroups
// in hybrid mode not supported, drop all controllers from cgroupv2"). This VM's
// holds hugetlb, which no v1 hierarchy had taken. Test setup, not specshim:
// each such controller is moved to a v1 hierarchy of its own, mounted at
// /sys/fs/cgroup/<controller> (which moves it off cgroup2), and left there.
// Idempotent (once moved, cgroup2 lists nothing); runc, which may run
// alongside, uses whichever hierarchies are mounted when it creates. Call it
// before running crun. Errors (std::runtime_error) start with error_prefix,
// the line printed to stderr for each controller moved with log_prefix.
void free_cgroup2_controllers(const std::string& error_prefix, const std::string& log_prefix);

// nvidia_stand_in is the text of a script that stands in for NVIDIA's
// runtime: on create or run it appends the NVIDIA_VISIBLE_DEVICES the
// bundle's config.json hands it (the last entry, as NVIDIA's runtime reads
// it; "unset" without one) to record, then execs runtime with its arguments.
std::string nvidia_stand_in(const std::filesystem::path& record, const std::filesystem::path& runtime);

}  // namespace specshim::test
