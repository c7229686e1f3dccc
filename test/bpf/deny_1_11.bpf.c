// SPDX-License-Identifier: Apache-2.0
// A cgroup device program that denies char 1:11 (/dev/kmsg's numbers) and
// allows everything else. Built with clang -target bpf, loaded and attached
// by bpftool (test/support/bpf_object.h): the stand-in for a device program
// runc attached, independent of specshim's own compiler, which tests must
// see replaced.
#include <linux/bpf.h>

__attribute__((section("cgroup/dev"), used)) int deny_1_11(struct bpf_cgroup_dev_ctx *ctx) {
  unsigned int type = ctx->access_type & 0xffff;
  if (type == BPF_DEVCG_DEV_CHAR && ctx->major == 1 && ctx->minor == 11) return 0;
  return 1;
}

char _license[] __attribute__((section("license"), used)) = "Apache-2.0";
