// SPDX-License-Identifier: Apache-2.0
// A cgroup device program named as systemd names the one it builds for a unit
// from DeviceAllow= (`sd_devices`), allowing everything: the stand-in for
// systemd's program beside runc's on a systemd scope, which specshim must
// leave to systemd and not count.
#include <linux/bpf.h>

__attribute__((section("cgroup/dev"), used)) int sd_devices(struct bpf_cgroup_dev_ctx *ctx) {
  (void)ctx;
  return 1;
}

char _license[] __attribute__((section("license"), used)) = "Apache-2.0";
