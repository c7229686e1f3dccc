# shellcheck shell=bash
# The bundles the benchmarks run creates on, shared by scripts/bench.sh (and
# the cases it sources) and scripts/hot-path-order.sh, so the hot path is
# profiled on the very bundles it is measured on. Sourced from the repo root.

# make_bundle DIR UID: CRI's config.json (test/bench/cri-config.json) with the
# process's uid and gid, a busybox-like rootfs with root's passwd and group
# entries, and config.orig, the copy a run restores config.json from.
make_bundle() {
  mkdir -p "$1/rootfs/etc"
  printf 'root:x:0:0:root:/root:/bin/sh\n' > "$1/rootfs/etc/passwd"
  printf 'root:x:0:\n' > "$1/rootfs/etc/group"
  jq -c --argjson uid "$2" '.process.user.uid = $uid | .process.user.gid = $uid' test/bench/cri-config.json > "$1/config.json"
  cp "$1/config.json" "$1/config.orig"
}

# cdi_bundle DIR UID DEVICES: make_bundle's, with DEVICES requested by a
# cdi.k8s.io/bench annotation.
cdi_bundle() {
  make_bundle "$1" "$2"
  jq -c --arg d "$3" '.annotations["cdi.k8s.io/bench"] = $d' "$1/config.orig" >"$1/config.json"
  cp "$1/config.json" "$1/config.orig"
}
