#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# devbox.sh: a dev box for the e2e tests: a privileged container given 2 of
# the host's 4 GPUs, running a real dockerd (Debian sid's 28.5.2, from
# scripts/fetch-docker.sh) whose default runtime is this build's specshim.
#
#   devbox.sh start DIR BUILD   create and start a dev box whose files live
#                               under DIR; returns once dockerd answers and the
#                               busybox image is loaded
#   devbox.sh exec DIR CMD...   run CMD inside the dev box (its mount, pid, uts,
#                               ipc, net and cgroup namespaces; its root)
#   devbox.sh docker DIR ARGS...  exec DIR docker ARGS...
#   devbox.sh stop DIR          kill the dev box (its whole pid namespace), delete
#                               its container, remove its cgroups and files
#
# Created through the outer runtime, as on a GPU node: the dev box is a
# container of this build's specshim (DIR/outer.toml) delegating to the host's
# runc, from a bundle (DIR/bundle/config.json) with what containerd writes for
# a privileged container with privileged_without_host_devices: all
# capabilities, no seccomp or AppArmor, read-write /sys and /proc, but a /dev
# of its own and a device cgroup that denies all but runc's defaults. Its
# GPUs come the way a device plugin hands them over: the annotation
# cdi.k8s.io/devbox = nvidia.com/gpu=1,nvidia.com/gpu=3 (SPECSHIM_DEVBOX_GPUS),
# which the outer specshim's cdi modifier resolves against a host CDI spec
# (DIR/host-cdi) naming the stand-in nodes DIR/host-dev/nvidia0..3 and
# nvidiactl: it adds the nodes and their cgroup rules. Nothing else of the
# host's /dev is there.
#
# Stand-in GPUs: 195:0..3 and nvidiactl 195:255, NVIDIA's numbers. No driver
# holds major 195 on the test machines, so an open the device cgroup allows
# fails with ENXIO and one it denies with EPERM (the systemd tier's unheld0
# convention), and, unlike 1:11 for all, each GPU has numbers of its own: the
# cgroup and CDI's type/major/minor tell nvidia1 from nvidia0.
#
# Root filesystem: the systemd node's cached Debian 12 tree (node.sh rootfs)
# with an overlay on top whose upper layer is DIR/upper, mounted in a mount
# namespace of devbox.sh's own (the host's mount table never holds it; the
# container's namespace keeps it until the container dies). This build is
# installed into it as the package lays it out (cmake --install, prefix /usr;
# /usr/bin/specshim and the stand-in hook's link alone from a build of that
# target only), with the shipped dev box config
# (packaging/examples/dind/config.toml) as /etc/specshim/config.toml and the
# node's CDI spec (box_cdi) read-only at /var/run/cdi, as docs/dind.md's
# recipe has it. systemd does not run: PID 1 is docker-init (tini) with
# dockerd under it.
#
# Namespaces: pid, mount, uts, ipc, net (loopback only) and cgroup. Its cgroups
# are /specshim-devbox-<dir> of every hierarchy; the cgroup2 one is mounted at
# its /sys/fs/cgroup (a cgroup2 mount in its cgroup namespace), so dockerd
# sees a pure cgroup v2 host. That hierarchy holds no controllers on a hybrid
# host: dockerd's containers carry no limits (docker run sets none), and
# device control on cgroup2 is a BPF program that needs none. The dev box's
# own v1 device cgroup still bounds everything inside it.
#
# dockerd (/etc/docker/daemon.json): the shipped
# packaging/examples/dind/daemon.json (runtimes.specshim = /usr/bin/specshim,
# the default runtime) and, for this dev box, no iptables, no bridge, overlay2
# on a tmpfs data-root, CDI on with cdi-spec-dirs /etc/cdi and /var/run/cdi.
# Its PATH: the package's /usr/libexec/specshim/docker (the stand-in for
# nvidia-container-runtime-hook, so that dockerd registers its `nvidia` device
# driver: --gpus), containerd-2 from fetch-containerd.sh (containerd,
# containerd-shim-runc-v2), docker-28, runc 1.3 (runtime-runc-1.3 from
# fetch-runtimes.sh, if there: the packaged config names no runc, so specshim
# execs the first on PATH), then the tree's.
#
# Everything it starts is in the container's pid namespace: stop kills its
# init, which takes dockerd, containerd and their containers with it. Dev
# boxes started are listed under /run/specshim-test/devboxes with their
# owner's pid; one whose owner died (a ctest timeout) is stopped by the next
# start.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${SPECSHIM_CONTAINERD_CACHE:-/var/cache/specshim-test}
DOCKER_DIR=${SPECSHIM_DOCKER_DIR:-$CACHE/docker-28}
CONTAINERD_DIR=${SPECSHIM_CONTAINERD_2_DIR:-$CACHE/containerd-2/usr/bin}
RUNC_DIR=$CACHE/runtime-runc-1.3/usr/sbin
GPUS=${SPECSHIM_DEVBOX_GPUS:-1 3}
START_SECONDS=${SPECSHIM_DEVBOX_START_SECONDS:-90}
REGISTRY=/run/specshim-test/devboxes
# shellcheck source=test/e2e/registry.sh
. "$HERE/../registry.sh"
HOST_RUNC=${SPECSHIM_DEVBOX_RUNC:-/usr/sbin/runc}
# dockerd's PATH inside the dev box (the hook's dir is added in front on request).
INNER_PATH=$CONTAINERD_DIR:$DOCKER_DIR/usr/sbin:$DOCKER_DIR/usr/bin:$RUNC_DIR:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The package's stand-in for NVIDIA's hook, first on dockerd's PATH as
# docs/dind.md says: dockerd then offers --gpus.
HOOK_DIR=/usr/libexec/specshim/docker

die() {
  echo "devbox.sh: $*" >&2
  exit 1
}

id_of() { echo "specshim-devbox-$(basename "$1")"; }

pid1() {
  local pid
  pid=$(cat "$1/pid" 2>/dev/null) || die "no dev box started in $1"
  [ -d "/proc/$pid" ] || die "the dev box of $1 (pid $pid) is not running; console: $(tail -5 "$1/console" 2>/dev/null)"
  echo "$pid"
}

in_box() {
  local dir=$1
  shift
  local pid
  pid=$(pid1 "$dir")
  nsenter -t "$pid" -m -p -u -i -n -C -r -w -- /usr/bin/env -i PATH="$INNER_PATH" HOME=/root "$@"
}


# gpu_uuid N: the stand-in GPU N's UUID, in the form NVIDIA's are.
gpu_uuid() { printf 'GPU-4a3b2c1d-0000-4000-8000-%012d' "$1"; }

# box_cdi DIR: the node's CDI spec as nvidia-ctk writes it (every GPU by
# index, UUID and `all`, node paths only, no numbers), mounted read-only into
# the dev box at /var/run/cdi as docs/dind.md's recipe says.
box_cdi() {
  local dir=$1 i
  mkdir -p "$dir/box-cdi"
  {
    echo "cdiVersion: 0.5.0"
    echo "kind: nvidia.com/gpu"
    echo "devices:"
    for i in 0 1 2 3; do
      printf -- '- name: "%s"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%s\n' "$i" "$i"
      printf -- '- name: "%s"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%s\n' "$(gpu_uuid "$i")" "$i"
    done
    printf -- '- name: all\n  containerEdits:\n    deviceNodes:\n'
    for i in 0 1 2 3; do printf -- '    - path: /dev/nvidia%s\n' "$i"; done
    printf 'containerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n'
  } >"$dir/box-cdi/nvidia.yaml"
}

# host_devices DIR: the stand-in GPU nodes and the host's CDI spec for them.
host_devices() {
  local dir=$1 i
  mkdir -p "$dir/host-dev" "$dir/host-cdi"
  {
    echo "cdiVersion: 0.5.0"
    echo "kind: nvidia.com/gpu"
    echo "devices:"
    for i in 0 1 2 3; do
      mknod -m 666 "$dir/host-dev/nvidia$i" c 195 "$i"
      printf -- '- name: "%s"\n  containerEdits:\n    deviceNodes:\n' "$i"
      printf -- '    - {path: /dev/nvidia%s, hostPath: %s, type: c, major: 195, minor: %s}\n' "$i" "$dir/host-dev/nvidia$i" "$i"
    done
    mknod -m 666 "$dir/host-dev/nvidiactl" c 195 255
    printf 'containerEdits:\n  deviceNodes:\n'
    printf -- '  - {path: /dev/nvidiactl, hostPath: %s, type: c, major: 195, minor: 255}\n' "$dir/host-dev/nvidiactl"
  } >"$dir/host-cdi/nvidia.yaml"
}

# bounding_caps: the capabilities this process may hand on, comma-separated
# (CAP_CHOWN,...): containerd gives a privileged container its own bounding
# set, which need not be every capability (a test VM may lack CAP_SYS_RESOURCE).
bounding_caps() {
  local decoded
  decoded=$(capsh --decode="$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)")
  decoded=${decoded#*=}
  echo "${decoded^^}"
}

# bundle_config DIR CGROUP: the dev box's config.json, as containerd writes it
# for a privileged container without host devices.
bundle_config() {
  local dir=$1 cgpath=$2 env_path=$HOOK_DIR:$INNER_PATH request="" g
  for g in $GPUS; do request+="${request:+,}nvidia.com/gpu=$g"; done
  jq -n --arg root "$dir/root" --arg cg "$cgpath" --arg path "$env_path" --arg cache "$CACHE" \
    --arg share "$dir/share" --arg cdi "$dir/box-cdi" --arg init "$DOCKER_DIR/usr/bin/docker-init" --arg dockerd "$DOCKER_DIR/usr/sbin/dockerd" \
    --arg host "$(basename "$dir")" --arg request "$request" --arg caps "$(bounding_caps)" '
  def caps: $caps | split(",");
  def tmpfs(dest; opts): {destination: dest, type: "tmpfs", source: "tmpfs", options: opts};
  {
    ociVersion: "1.1.0",
    process: {
      terminal: false, user: {uid: 0, gid: 0}, cwd: "/",
      args: [$init, "--", $dockerd, "--config-file", "/etc/docker/daemon.json"],
      env: ["PATH=" + $path, "HOME=/root", "container=specshim-devbox"],
      capabilities: {bounding: caps, effective: caps, permitted: caps},
      noNewPrivileges: false
    },
    root: {path: $root, readonly: false},
    hostname: $host,
    annotations: {"cdi.k8s.io/devbox": $request},
    mounts: [
      {destination: "/proc", type: "proc", source: "proc", options: ["nosuid", "noexec", "nodev"]},
      tmpfs("/dev"; ["nosuid", "strictatime", "mode=755", "size=65536k"]),
      {destination: "/dev/pts", type: "devpts", source: "devpts",
       options: ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
      tmpfs("/dev/shm"; ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]),
      {destination: "/dev/mqueue", type: "mqueue", source: "mqueue", options: ["nosuid", "noexec", "nodev"]},
      {destination: "/sys", type: "sysfs", source: "sysfs", options: ["nosuid", "noexec", "nodev", "rw"]},
      {destination: "/sys/fs/cgroup", type: "cgroup2", source: "cgroup2", options: ["nosuid", "noexec", "nodev", "rw"]},
      tmpfs("/run"; ["nosuid", "nodev", "mode=755"]),
      {destination: "/run/cdi", type: "bind", source: $cdi, options: ["rbind", "ro"]},
      tmpfs("/tmp"; ["nosuid", "nodev", "mode=1777"]),
      tmpfs("/var/lib/docker"; ["mode=711", "size=2g"]),
      {destination: $cache, type: "bind", source: $cache, options: ["rbind", "ro"]},
      {destination: "/specshim-test", type: "bind", source: $share, options: ["rbind", "rw"]}
    ],
    linux: {
      cgroupsPath: $cg,
      sysctl: {"net.ipv4.ip_forward": "1"},
      resources: {devices: [{allow: false, access: "rwm"}]},
      namespaces: [{type: "pid"}, {type: "mount"}, {type: "ipc"}, {type: "uts"}, {type: "network"}, {type: "cgroup"}]
    }
  }'
}

# docker_archive OUT: the busybox image as `docker load` takes it. dockerd
# 28's graph-driver image store reads only the docker-save manifest.json of
# an archive (its OCI index.json needs the containerd image store), so the
# OCI archive of make-oci-image.sh gets one, naming the same blobs.
docker_archive() {
  local out=$1 work
  work=$(mktemp -d)
  sh "$HERE/../make-oci-image.sh" "$out" docker.io/library/busybox:latest /bin/busybox sh
  tar -xf "$out" -C "$work" ./index.json
  local manifest
  manifest=$(jq -r '.manifests[0].digest | sub("sha256:"; "")' "$work/index.json")
  tar -xf "$out" -C "$work" "./blobs/sha256/$manifest"
  jq -c '[{Config: ("blobs/sha256/" + (.config.digest | sub("sha256:"; ""))), RepoTags: ["busybox:latest"],
           Layers: [.layers[].digest | "blobs/sha256/" + sub("sha256:"; "")]}]' \
    "$work/blobs/sha256/$manifest" >"$work/manifest.json"
  tar --owner=0 --group=0 --numeric-owner --mtime=@0 -rf "$out" -C "$work" ./manifest.json
  rm -rf "$work"
}

# daemon_json: the shipped packaging/examples/dind/daemon.json (specshim as
# the default runtime) with what this test's dev box needs besides: no
# iptables or bridge (its network namespace has loopback only), overlay2 on
# its tmpfs data-root, CDI from the default dirs.
daemon_json() {
  jq -s '.[0] * .[1]' "$HERE/../../../packaging/examples/dind/daemon.json" - <<'JSON'
{
  "iptables": false,
  "ip6tables": false,
  "bridge": "none",
  "userland-proxy": false,
  "storage-driver": "overlay2",
  "data-root": "/var/lib/docker",
  "exec-root": "/run/docker",
  "features": {"cdi": true},
  "cdi-spec-dirs": ["/etc/cdi", "/var/run/cdi"],
  "log-level": "info"
}
JSON
}

# stage2 runs in a mount namespace of its own: mounts the dev box's root,
# installs the build into it and creates the container through the outer
# specshim. The overlay stays in the container's mount namespace only.
stage2() {
  local dir=$1 build=$2 tree=$3 id
  id=$(id_of "$dir")
  local root=$dir/root
  mount -t overlay overlay -o "lowerdir=$tree,upperdir=$dir/upper,workdir=$dir/work" "$root"
  # The package's layout when the build has every installed program (a full
  # build); else the one program a dev box runs, /usr/bin/specshim (dockerd's
  # runtime; the CRI, kubelet and NRI helpers serve containerd's CRI, which a
  # dev box's dockerd does not use), so that a build of `specshim` alone will do.
  if ! DESTDIR=$root cmake --install "$build" --prefix /usr >"$dir/install.log" 2>&1; then
    echo "devbox.sh: cmake --install failed (a partial build?): installing $build/shim/specshim alone" >>"$dir/install.log"
    install -D -m 755 "$build/shim/specshim" "$root/usr/bin/specshim"
    mkdir -p "$root$HOOK_DIR"
    ln -sf ../../../bin/specshim "$root$HOOK_DIR/nvidia-container-runtime-hook"
  fi
  [ -x "$root/usr/bin/specshim" ] || die "no /usr/bin/specshim in the dev box; see $dir/install.log"
  install -D -m 644 "$HERE/../../../packaging/examples/dind/config.toml" "$root/etc/specshim/config.toml"
  mkdir -p "$root/etc/docker" "$root/etc/cdi" "$root/var/lib/docker" "$root/specshim-test" "$root$CACHE"
  daemon_json >"$root/etc/docker/daemon.json"
  [ -L "$root$HOOK_DIR/nvidia-container-runtime-hook" ] || die "no stand-in hook in the dev box; see $dir/install.log"
  printf '127.0.0.1 localhost %s\n::1 localhost\n' "$(basename "$dir")" >"$root/etc/hosts"
  SPECSHIM_CONFIG=$dir/outer.toml "$build/shim/specshim" --root "$dir/state" --log "$dir/runtime.log" \
    create --bundle "$dir/bundle" --pid-file "$dir/pid" "$id" </dev/null >>"$dir/console" 2>&1 ||
    die "the outer runtime failed to create the dev box: $(tail -5 "$dir/runtime.log" 2>/dev/null)"
  SPECSHIM_CONFIG=$dir/outer.toml "$build/shim/specshim" --root "$dir/state" start "$id" ||
    die "the outer runtime failed to start the dev box"
}

start() {
  local dir=$1 build=$2 tree id
  [ -x "$build/shim/specshim" ] || die "$build/shim/specshim is missing (cmake --build $build --target specshim)"
  [ -x "$DOCKER_DIR/usr/sbin/dockerd" ] || die "no dockerd in $DOCKER_DIR (scripts/fetch-docker.sh)"
  [ -x "$CONTAINERD_DIR/containerd" ] || die "no containerd in $CONTAINERD_DIR (scripts/fetch-containerd.sh)"
  command -v jq >/dev/null || die "jq is missing"
  tree=$("$HERE/../systemd-node/node.sh" rootfs)
  dir=$(realpath "$dir")
  build=$(realpath "$build")
  id=$(id_of "$dir")
  register "$REGISTRY" "$dir"
  mkdir -p "$dir/upper" "$dir/work" "$dir/root" "$dir/bundle" "$dir/state" "$dir/share"
  chmod 755 "$dir" "$dir/share"
  : >"$dir/console"
  host_devices "$dir"
  box_cdi "$dir"
  printf '[runtime]\npath = "%s"\n\n[log]\nfile = "%s"\nlevel = "debug"\n\n[cdi]\nspec-dirs = ["%s"]\n' \
    "$HOST_RUNC" "$dir/outer.log" "$dir/host-cdi" >"$dir/outer.toml"
  # The dev box's cgroups: /specshim-devbox-<dir> of each hierarchy (runc makes
  # them; on a hybrid host runc joins the cgroup2 one too).
  local unified=/sys/fs/cgroup/unified
  [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && unified=/sys/fs/cgroup
  echo "$unified/$id" >"$dir/cgroup"
  bundle_config "$dir" "/$id" >"$dir/bundle/config.json"
  docker_archive "$dir/share/busybox.tar"
  unshare --mount --propagation private "$HERE/devbox.sh" stage2 "$dir" "$build" "$tree"
  local pid
  pid=$(pid1 "$dir")
  # dockerd answers: its socket, polled until the deadline.
  local deadline=$((SECONDS + START_SECONDS))
  until in_box "$dir" docker version >/dev/null 2>&1; do
    [ -d "/proc/$pid" ] || die "the dev box's init exited; console:
$(tail -20 "$dir/console")"
    [ "$SECONDS" -lt "$deadline" ] || die "dockerd does not answer after ${START_SECONDS}s; console:
$(tail -30 "$dir/console")"
    sleep 0.1
  done
  in_box "$dir" docker load -q -i /specshim-test/busybox.tar >/dev/null ||
    die "docker load of the busybox image failed"
}

stop() {
  local dir=$1 id
  id=$(id_of "$dir")
  if [ -d "$dir/state/$id" ]; then
    "$HOST_RUNC" --root "$dir/state" kill "$id" KILL 2>/dev/null || true
    "$HOST_RUNC" --root "$dir/state" delete --force "$id" 2>/dev/null || true
  fi
  local pid
  pid=$(cat "$dir/pid" 2>/dev/null) || pid=""
  if [ -n "$pid" ]; then
    kill -KILL "$pid" 2>/dev/null || true
    while [ -d "/proc/$pid" ]; do sleep 0.02; done
  fi
  local cg h
  cg=$(cat "$dir/cgroup" 2>/dev/null) || cg=""
  if [ -n "$cg" ]; then
    # The cgroup2 one (dockerd's containers' dirs under it) and every v1 one.
    for h in "$cg" /sys/fs/cgroup/*/"$id"; do
      [ -d "$h" ] || continue
      find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ -d "$h" ] && die "could not remove the dev box's cgroup $h"
    done
  fi
  rm -rf "$dir/upper" "$dir/work" "$dir/root" "$dir/state" "$dir/host-dev"
  unregister "$REGISTRY" "$dir"
}

cmd=${1:-}
shift || true
case $cmd in
  start) [ $# -eq 2 ] || die "usage: devbox.sh start DIR BUILD" && start "$@" ;;
  stage2) stage2 "$@" ;;
  exec) [ $# -ge 2 ] || die "usage: devbox.sh exec DIR CMD..." && in_box "$@" ;;
  docker) [ $# -ge 1 ] || die "usage: devbox.sh docker DIR ARGS..." && in_box "$1" docker "${@:2}" ;;
  stop) [ $# -eq 1 ] || die "usage: devbox.sh stop DIR" && stop "$@" ;;
  *) die "usage: devbox.sh start DIR BUILD | exec DIR CMD... | docker DIR ARGS... | stop DIR" ;;
esac
