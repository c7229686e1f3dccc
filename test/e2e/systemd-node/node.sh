#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# node.sh: a systemd node for the e2e tests, booted on this host without
# touching it. systemd runs as PID 1 of its own pid, mount, cgroup, uts and ipc
# namespaces, on a root filesystem of its own: a Debian 12 minbase tree
# (systemd, dbus, containerd 1.6, runc 1.1.5), built once from the package
# mirror and cached under /var/cache/specshim-test/systemd-node, with an
# overlay on top per boot so that nothing of a boot survives it. Its cgroup
# root is a fresh directory of the host's cgroup2 hierarchy, mounted at the
# node's /sys/fs/cgroup: systemd sees a unified hierarchy and owns it (device
# control on cgroup2 is a BPF program and needs no controller, so it works on
# a cgroup v1 hybrid host whose cgroup2 holds none).
#
#   node.sh rootfs              build the cached tree if missing; print its path
#   node.sh boot DIR BUILD SHARE
#                               boot a node whose files live under DIR (overlay
#                               upper/work dirs, pid, boot log): this build
#                               tree installed into it as a package lays it out
#                               (cmake --install, prefix /usr), SHARE bound at
#                               /specshim-test; returns once systemd reports
#                               the system up and containerd answers
#   node.sh exec DIR CMD...     run CMD inside the node (its mount, pid, uts,
#                               ipc and cgroup namespaces; its root)
#   node.sh stop DIR            kill the node (its whole pid namespace), remove
#                               its cgroups and its files
#
# What never reaches the host: the node's /tmp, /run and /var are its own
# (tmpfs, and the overlay), its /sys is read-only, its /dev a tmpfs with the
# usual nodes, and systemd-udevd does not start (read-only /sys). The host's
# /var/cache/specshim-test is bound read-only, for the runtimes fetched there.
set -euo pipefail

CACHE=${SPECSHIM_SYSTEMD_NODE_CACHE:-/var/cache/specshim-test/systemd-node}
MIRROR=${SPECSHIM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=systemd,systemd-sysv,dbus,containerd,runc,libseccomp2,procps,jq
HERE=$(cd "$(dirname "$0")" && pwd)
# The tree's name changes with what goes into it, so a changed list builds anew.
ROOTFS=$CACHE/bookworm-$(printf '%s\n' "$PACKAGES" "$(cat "$HERE/prepare-rootfs.sh")" | sha256sum | cut -c1-12)
BOOT_SECONDS=${SPECSHIM_NODE_BOOT_SECONDS:-90}

die() {
  echo "node.sh: $*" >&2
  exit 1
}

rootfs() {
  if [ ! -e "$ROOTFS/.complete" ]; then
    command -v debootstrap >/dev/null || die "debootstrap is missing (scripts/install-deps.sh installs it)"
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.lock"
    flock 9
    if [ ! -e "$ROOTFS/.complete" ]; then
      local tmp=$ROOTFS.tmp
      rm -rf "$tmp"
      echo "node.sh: building $ROOTFS (debootstrap minbase bookworm, $PACKAGES)" >&2
      debootstrap --variant=minbase --include="$PACKAGES" bookworm "$tmp" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
        die "debootstrap failed; see $CACHE/debootstrap.log"
      bash "$HERE/prepare-rootfs.sh" "$tmp"
      touch "$tmp/.complete"
      mv "$tmp" "$ROOTFS"
    fi
    exec 9>&-
  fi
  echo "$ROOTFS"
}

# pid1 DIR: the host pid of the node's systemd.
pid1() {
  local pid
  pid=$(cat "$1/pid" 2>/dev/null) || die "no node booted in $1"
  [ -d "/proc/$pid" ] || die "the node of $1 (pid $pid) is not running"
  echo "$pid"
}

in_node() {
  local dir=$1
  shift
  local pid
  pid=$(pid1 "$dir")
  nsenter -t "$pid" -m -p -u -i -C -r -w -- /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# stage2 runs as PID 1 of the new namespaces: mounts the node's root, installs
# the build into it, and becomes systemd.
stage2() {
  local dir=$1 build=$2 share=$3 tree=$4
  local root=$dir/root
  mount --make-rprivate /
  mount -t overlay overlay -o "lowerdir=$tree,upperdir=$dir/upper,workdir=$dir/work" "$root"
  DESTDIR=$root cmake --install "$build" --prefix /usr >"$dir/install.log" 2>&1
  cp "$HERE/containerd.toml" "$root/etc/containerd/config.toml"
  install -D -m 755 "$HERE/runtime.sh" "$root/usr/local/libexec/specshim-node/runtime"
  # containerd's CRI copies the node's /etc/hosts into each sandbox; minbase has none.
  printf '127.0.0.1 localhost %s\n::1 localhost\n' specshim-node >"$root/etc/hosts"
  mount -t proc proc "$root/proc"
  mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
  mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root/sys/fs/cgroup"
  mount -t tmpfs -o mode=755,nosuid,size=64m tmpfs "$root/dev"
  local n
  for n in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r name major minor <<<"$n"
    mknod -m 666 "$root/dev/$name" c "$major" "$minor"
  done
  mkdir "$root/dev/pts" "$root/dev/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$root/dev/pts"
  ln -s pts/ptmx "$root/dev/ptmx"
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
  # systemd writes its status lines to the console: the boot log.
  touch "$root/dev/console"
  mount --bind "$dir/console" "$root/dev/console"
  mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$root/run"
  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/tmp"
  mkdir -p "$root/specshim-test" "$root/var/cache/specshim-test"
  mount --bind "$share" "$root/specshim-test"
  if [ -d /var/cache/specshim-test ]; then
    mount --bind /var/cache/specshim-test "$root/var/cache/specshim-test"
    mount -o remount,bind,ro "$root/var/cache/specshim-test"
  fi
  cd "$root"
  mkdir -p .oldroot
  pivot_root . .oldroot
  umount -l /.oldroot
  rmdir /.oldroot
  exec /usr/bin/env -i container=specshim-test PATH=/usr/sbin:/usr/bin:/sbin:/bin /lib/systemd/systemd \
    --log-target=console --show-status=yes
}

# Nodes booted, one file each: the owner's pid (the test process) and the
# node's dir. A node whose owner died (a ctest timeout) is stopped by the
# next boot.
REGISTRY=/run/specshim-test/systemd-nodes
# shellcheck source=test/e2e/registry.sh
. "$HERE/../registry.sh"


boot() {
  local dir=$1 build=$2 share=$3
  local tree
  tree=$(rootfs)
  register "$REGISTRY" "$dir"
  mkdir -p "$dir/upper" "$dir/work" "$dir/root"
  : >"$dir/console"
  # The node's cgroup root: a directory of the host's cgroup2 hierarchy.
  local unified=/sys/fs/cgroup/unified
  [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && unified=/sys/fs/cgroup
  local cg
  cg=$unified/specshim-node-$(basename "$dir")
  mkdir -p "$cg"
  echo "$cg" >"$dir/cgroup"
  (
    echo $BASHPID >"$cg/cgroup.procs"
    exec unshare --pid --mount --uts --ipc --cgroup --fork --kill-child=SIGKILL \
      "$HERE/node.sh" stage2 "$dir" "$build" "$share" "$tree" </dev/null >>"$dir/console" 2>&1
  ) &
  local unshare_pid=$! child="" _
  for _ in $(seq 1 500); do
    child=$(awk '{print $1}' "/proc/$unshare_pid/task/$unshare_pid/children" 2>/dev/null)
    [ -n "$child" ] && break
    sleep 0.01
  done
  [ -n "$child" ] || die "the node's init did not start; console: $(tail -5 "$dir/console")"
  echo "$child" >"$dir/pid"
  echo "$unshare_pid" >"$dir/unshare-pid"
  # Up: systemd answers on its bus and has finished starting (running or degraded).
  local state=""
  for _ in $(seq 1 $((BOOT_SECONDS * 10))); do
    kill -0 "$child" 2>/dev/null || die "the node's systemd exited; console:
$(tail -20 "$dir/console")"
    state=$(in_node "$dir" systemctl is-system-running 2>/dev/null) || true
    case $state in running | degraded) break ;; esac
    sleep 0.1
  done
  case $state in running | degraded) ;; *) die "systemd not up after ${BOOT_SECONDS}s (state '$state'); console:
$(tail -30 "$dir/console")" ;; esac
  if [ "$state" = degraded ]; then
    echo "node.sh: node up, degraded: $(in_node "$dir" systemctl --failed --no-legend --plain | awk '{print $1}' | xargs)" >&2
  fi
}

stop() {
  local dir=$1 pid
  pid=$(cat "$dir/pid" 2>/dev/null) || pid=""
  if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    while [ -d "/proc/$pid" ]; do sleep 0.02; done
  fi
  local up
  up=$(cat "$dir/unshare-pid" 2>/dev/null) || up=""
  if [ -n "$up" ]; then
    while kill -0 "$up" 2>/dev/null; do sleep 0.02; done
  fi
  local cg
  cg=$(cat "$dir/cgroup" 2>/dev/null) || cg=""
  if [ -n "$cg" ] && [ -d "$cg" ]; then
    # Depth first: every process in them died with the pid namespace.
    find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ -d "$cg" ] && die "could not remove the node's cgroup $cg"
  fi
  rm -rf "$dir/upper" "$dir/work" "$dir/root"
  unregister "$REGISTRY" "$dir"
}

cmd=${1:-}
shift || true
case $cmd in
  rootfs) rootfs ;;
  boot) [ $# -eq 3 ] || die "usage: node.sh boot DIR BUILD SHARE" && boot "$@" ;;
  stage2) stage2 "$@" ;;
  exec) [ $# -ge 2 ] || die "usage: node.sh exec DIR CMD..." && in_node "$@" ;;
  stop) [ $# -eq 1 ] || die "usage: node.sh stop DIR" && stop "$@" ;;
  *) die "usage: node.sh rootfs | boot DIR BUILD SHARE | exec DIR CMD... | stop DIR" ;;
esac
