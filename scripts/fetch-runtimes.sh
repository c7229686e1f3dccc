#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# fetch-runtimes.sh: the OCI runtimes 2026 nodes run (runc 1.3, crun) for the
# e2e delegate tiers, beside (never over) the system's runc 1.1.5.
#
# Debian sid ships them, linked against sid's glibc. As fetch-containerd.sh
# does for containerd, apt downloads each runtime and the packages it depends
# on (libc6, libseccomp2; for crun also libcap2, libjson-c5, libblake3-0,
# libsystemd0 ...) with a state directory of its own, from the Debian mirror
# the machine's apt sources already use, and dpkg-deb unpacks them together
# under
#   $SPECSHIM_CONTAINERD_CACHE/runtime-<name>/   (default /var/cache/specshim-test)
# Then patchelf points the runtime binary at that directory's own loader and
# libraries (--set-interpreter <dir>/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2,
# an RPATH of <dir>/usr/lib/x86_64-linux-gnu, inherited by its libraries), so
# it runs on Debian 12 without touching the system's libc. Nothing is
# installed: dpkg's database, /usr and the system's runc are untouched.
#
# The e2e tests look for the binaries there (runtime-runc-1.3/usr/sbin/runc,
# runtime-crun/usr/bin/crun), or take them from SPECSHIM_RUNC_1_3 and
# SPECSHIM_CRUN (each naming a runtime binary that runs on this machine),
# which is how to provide them on a machine that cannot download.
set -euo pipefail

CACHE=${SPECSHIM_CONTAINERD_CACHE:-/var/cache/specshim-test}
SUITE=sid
# name  package  binary (in the package)  version prefix that --version must show
RUNTIMES=("runc-1.3 runc usr/sbin/runc 1.3." "crun crun usr/bin/crun 1.")
LIBDIR=usr/lib/x86_64-linux-gnu

log() { printf 'fetch-runtimes: %s\n' "$*"; }
die() {
  printf 'fetch-runtimes: error: %s\n' "$*" >&2
  printf 'fetch-runtimes: provide the binaries instead: SPECSHIM_RUNC_1_3 (a runc 1.3.x) and SPECSHIM_CRUN (a crun),\n' >&2
  printf 'fetch-runtimes: each naming a runtime binary that runs on this machine\n' >&2
  exit 1
}

# version BINARY: the first line of its --version (read whole: no pipe that
# could end it early under pipefail).
version() {
  local out
  out=$("$1" --version 2>&1) || true
  printf '%s\n' "${out%%$'\n'*}"
}

# have_runtime DIR BINARY PREFIX: the unpacked, patched runtime runs and is the
# wanted version.
have_runtime() {
  [ -x "$1/$2" ] && [[ "$(version "$1/$2")" == *"version $3"* ]]
}

# shellcheck source=scripts/lib/private-apt.sh
. "$(dirname "$0")/lib/private-apt.sh"

if [ -n "${SPECSHIM_RUNC_1_3:-}" ] && [ -n "${SPECSHIM_CRUN:-}" ]; then
  log "runc 1.3 and crun given: $SPECSHIM_RUNC_1_3, $SPECSHIM_CRUN"
  exit 0
fi
command -v patchelf >/dev/null || die "patchelf is missing (scripts/install-deps.sh installs it)"

missing=()
for entry in "${RUNTIMES[@]}"; do
  read -r name _ binary prefix <<<"$entry"
  have_runtime "$CACHE/runtime-$name" "$binary" "$prefix" || missing+=("$entry")
done
if [ "${#missing[@]}" -eq 0 ]; then
  log "runc 1.3 and crun already in $CACHE"
  exit 0
fi

log "downloading runtimes ($SUITE) from the machine's Debian mirror"
apt_dir="$CACHE/apt-runtimes"
private_apt "$apt_dir" "$SUITE"
for entry in "${missing[@]}"; do
  read -r name package binary prefix <<<"$entry"
  # The package and what it depends on, recursively (with no dpkg status,
  # nothing counts as installed): libc6, the libraries, their base packages.
  mapfile -t packages < <(apt-cache "${APT_OPTS[@]}" depends --recurse --no-recommends --no-suggests \
    --no-conflicts --no-breaks --no-replaces --no-enhances "$package" | grep -v '^[ <]' | sort -u)
  grep -qx libc6 < <(printf '%s\n' "${packages[@]}") || die "$package/$SUITE depends on no libc6?"
  rm -f "$apt_dir/debs"/*.deb
  (cd "$apt_dir/debs" && apt-get "${APT_OPTS[@]}" download "${packages[@]}" >/dev/null) ||
    die "apt-get download ${packages[*]} ($SUITE) failed"
  target="$CACHE/runtime-$name"
  rm -rf "$target.new"
  for deb in "$apt_dir/debs"/*.deb; do dpkg-deb -x "$deb" "$target.new"; done
  [ -f "$target.new/$binary" ] || die "$package/$SUITE has no $binary"
  # Patched for the final path (the directory is renamed into place below).
  loader="$target/$LIBDIR/ld-linux-x86-64.so.2"
  [ -f "$target.new/$LIBDIR/ld-linux-x86-64.so.2" ] || die "libc6/$SUITE has no $LIBDIR/ld-linux-x86-64.so.2"
  patchelf --set-interpreter "$loader" --force-rpath --set-rpath "$target/$LIBDIR" "$target.new/$binary"
  rm -rf "$target" && mv "$target.new" "$target"
  # Every library the binary needs resolves inside the directory.
  libs=$("$loader" --list "$target/$binary") || die "$target/$binary does not load: $libs"
  outside=$(awk '/=>/ && $3 !~ "^'"$target"'/" { print }' <<<"$libs")
  [ -z "$outside" ] || die "$target/$binary loads libraries from outside $target: $outside"
  have_runtime "$target" "$binary" "$prefix" ||
    die "$target/$binary --version does not say version $prefix: $(version "$target/$binary")"
  # What the tiers are for: idmap mounts, which containerd 2.x requires for
  # user-namespaced pods (runc >= 1.2, crun >= 1.9).
  "$target/$binary" features | jq -e '.linux.mountExtensions.idmap.enabled == true' >/dev/null ||
    die "$target/$binary features does not list linux.mountExtensions.idmap.enabled"
  log "$name: $(version "$target/$binary") (${#packages[@]} packages in $target), idmap mounts"
  rm -f "$apt_dir/debs"/*.deb
done
# The package lists are only needed for this download.
rm -rf "$apt_dir/lists"
