#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# fetch-docker.sh: the dockerd the e2e dev box tier runs (test/e2e/devbox),
# with specshim as its default runtime: Debian sid's docker.io 28.5.2, its
# client (docker-cli, the same version) and docker-init (tini-static), beside
# (never over) anything of the system's.
#
# As fetch-runtimes.sh does for runc 1.3 and crun, apt downloads the packages
# with a state directory of its own, from the Debian mirror the machine's apt
# sources already use, together with the libraries dockerd links (libc6,
# libsystemd0 and what it depends on), and dpkg-deb unpacks them together
# under
#   $SPECSHIM_CONTAINERD_CACHE/docker-28/   (default /var/cache/specshim-test)
# patchelf then points dockerd and docker at that directory's loader and
# libraries (an RPATH, inherited by the libraries). Today's 28.5.2+dfsg4 would
# also run on Debian 12's glibc 2.36 and libsystemd 252 (it needs GLIBC_2.34,
# LIBSYSTEMD_209), but sid rebuilds against its own glibc without notice; the
# private loader keeps the tier independent of that. tini-static is static.
#
# containerd: dockerd starts `containerd` (and containerd starts
# `containerd-shim-runc-v2`) from its PATH. The dev box puts the one
# fetch-containerd.sh unpacked in containerd-2 there: sid's containerd 2.1,
# the package docker.io depends on, already in the cache (no second copy),
# running unpatched on Debian 12's libc, and the binaries the e2e-2 tiers
# test. The dev box's tree has Debian 12's containerd 1.6, which dockerd 28
# would accept, but that is not what a 2026 dev box runs. runc: specshim is
# dockerd's runtime and execs the runc its config names (the dev box's is
# runtime-runc-1.3 from fetch-runtimes.sh, or the tree's runc 1.1.5).
#
# The client: docker-cli rather than curl on dockerd's socket, because the
# cases are `docker run --gpus ...` and `docker load`: the client turns
# --gpus into the API's DeviceRequests and streams an OCI archive; doing
# that by hand would test a re-implementation of the client instead.
#
# SPECSHIM_DOCKER_DIR names a directory laid out like docker-28 (usr/sbin/dockerd,
# usr/bin/docker, usr/bin/docker-init) on a machine that cannot download.
set -euo pipefail

CACHE=${SPECSHIM_CONTAINERD_CACHE:-/var/cache/specshim-test}
SUITE=sid
DOCKER_VERSION=28.5.2
TARGET=$CACHE/docker-28
LIBDIR=usr/lib/x86_64-linux-gnu
PACKAGES=(docker.io docker-cli tini-static)
# Patched to the private loader; the rest (docker-init) are static.
PATCHED=(usr/sbin/dockerd usr/bin/docker)

log() { printf 'fetch-docker: %s\n' "$*"; }
die() {
  printf 'fetch-docker: error: %s\n' "$*" >&2
  printf 'fetch-docker: provide the binaries instead: SPECSHIM_DOCKER_DIR, a directory with usr/sbin/dockerd,\n' >&2
  printf 'fetch-docker: usr/bin/docker and usr/bin/docker-init (docker %s) that run on this machine\n' "$DOCKER_VERSION" >&2
  exit 1
}

version() {
  local out
  out=$("$1" --version 2>&1) || true
  printf '%s\n' "${out%%$'\n'*}"
}

have_docker() {
  [ -x "$1/usr/sbin/dockerd" ] && [ -x "$1/usr/bin/docker" ] && [ -x "$1/usr/bin/docker-init" ] &&
    [[ "$(version "$1/usr/sbin/dockerd")" == "Docker version $DOCKER_VERSION"* ]] &&
    [[ "$(version "$1/usr/bin/docker")" == "Docker version $DOCKER_VERSION"* ]]
}

# shellcheck source=scripts/lib/private-apt.sh
. "$(dirname "$0")/lib/private-apt.sh"

if [ -n "${SPECSHIM_DOCKER_DIR:-}" ]; then
  have_docker "$SPECSHIM_DOCKER_DIR" || die "SPECSHIM_DOCKER_DIR=$SPECSHIM_DOCKER_DIR holds no docker $DOCKER_VERSION"
  log "docker given: $SPECSHIM_DOCKER_DIR"
  exit 0
fi
if have_docker "$TARGET"; then
  log "docker $DOCKER_VERSION already in $TARGET"
  exit 0
fi
command -v patchelf >/dev/null || die "patchelf is missing (scripts/install-deps.sh installs it)"
[ -x "$CACHE/containerd-2/usr/bin/containerd" ] ||
  log "note: no $CACHE/containerd-2 (scripts/fetch-containerd.sh): the dev box's dockerd needs it"

log "downloading docker.io $DOCKER_VERSION ($SUITE) from the machine's Debian mirror"
apt_dir="$CACHE/apt-docker"
private_apt "$apt_dir" "$SUITE"
candidate=$(apt-cache "${APT_OPTS[@]}" policy docker.io | awk '/Candidate:/ { print $2 }')
[[ "$candidate" == "$DOCKER_VERSION"* ]] || die "docker.io in $SUITE is $candidate, not $DOCKER_VERSION"
# The libraries dockerd links, recursively (with no dpkg status, nothing
# counts as installed): libc6, libsystemd0 and its libcap2, liblz4 ...
mapfile -t libs < <(apt-cache "${APT_OPTS[@]}" depends --recurse --no-recommends --no-suggests \
  --no-conflicts --no-breaks --no-replaces --no-enhances libc6 libsystemd0 | grep -v '^[ <]' | sort -u)
rm -f "$apt_dir/debs"/*.deb
(cd "$apt_dir/debs" && apt-get "${APT_OPTS[@]}" download "${PACKAGES[@]}" "${libs[@]}" >/dev/null) ||
  die "apt-get download ${PACKAGES[*]} ${libs[*]} ($SUITE) failed"
rm -rf "$TARGET.new"
for deb in "$apt_dir/debs"/*.deb; do dpkg-deb -x "$deb" "$TARGET.new"; done
loader="$TARGET/$LIBDIR/ld-linux-x86-64.so.2"
[ -f "$TARGET.new/$LIBDIR/ld-linux-x86-64.so.2" ] || die "libc6/$SUITE has no $LIBDIR/ld-linux-x86-64.so.2"
for binary in "${PATCHED[@]}"; do
  [ -f "$TARGET.new/$binary" ] || die "the packages have no $binary"
  patchelf --set-interpreter "$loader" --force-rpath --set-rpath "$TARGET/$LIBDIR" "$TARGET.new/$binary"
done
rm -rf "$TARGET" && mv "$TARGET.new" "$TARGET"
for binary in "${PATCHED[@]}"; do
  out=$("$loader" --list "$TARGET/$binary") || die "$TARGET/$binary does not load: $out"
  outside=$(awk '/=>/ && $3 !~ "^'"$TARGET"'/" { print }' <<<"$out")
  [ -z "$outside" ] || die "$TARGET/$binary loads libraries from outside $TARGET: $outside"
done
have_docker "$TARGET" || die "$TARGET: dockerd or docker --version is not $DOCKER_VERSION: $(version "$TARGET/usr/sbin/dockerd")"
log "$(version "$TARGET/usr/sbin/dockerd") in $TARGET ($((${#PACKAGES[@]} + ${#libs[@]})) packages)"
rm -f "$apt_dir/debs"/*.deb
rm -rf "$apt_dir/lists"
