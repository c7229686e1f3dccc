#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# fetch-containerd.sh: the containerd 1.7 and 2.x that the e2e tiers run,
# beside (never over) the system's containerd 1.6.
#
# Debian ships them: containerd 1.7 in trixie, 2.x in sid; both run on
# Debian 12's libc. apt downloads the two packages with a state directory of
# its own, from the Debian mirror the machine's apt sources already use (as
# apt itself reports them), and dpkg-deb unpacks each under
#   $SPECSHIM_CONTAINERD_CACHE/containerd-<tier>/   (default /var/cache/specshim-test)
# so the tier's binaries are in containerd-<tier>/usr/bin. A tier that is
# already unpacked is not downloaded again. Nothing is installed: dpkg's
# database and /usr are untouched.
#
# The e2e tests look for the binaries there, or in the directories named by
# SPECSHIM_CONTAINERD_1_7_DIR and SPECSHIM_CONTAINERD_2_DIR (each holding
# containerd, ctr and containerd-shim-runc-v2), which is how to provide them
# on a machine that cannot download.
set -euo pipefail

CACHE=${SPECSHIM_CONTAINERD_CACHE:-/var/cache/specshim-test}
# tier  suite   (the Debian suite whose containerd the tier runs)
TIERS=("1.7 trixie" "2 sid")

log() { printf 'fetch-containerd: %s\n' "$*"; }
die() {
  printf 'fetch-containerd: error: %s\n' "$*" >&2
  printf 'fetch-containerd: provide the binaries instead: SPECSHIM_CONTAINERD_1_7_DIR and SPECSHIM_CONTAINERD_2_DIR,\n' >&2
  printf 'fetch-containerd: each a directory with containerd, ctr and containerd-shim-runc-v2\n' >&2
  exit 1
}

have_tier() { [ -x "$1/usr/bin/containerd" ] && [ -x "$1/usr/bin/ctr" ] && [ -x "$1/usr/bin/containerd-shim-runc-v2" ]; }

# shellcheck source=scripts/lib/private-apt.sh
. "$(dirname "$0")/lib/private-apt.sh"

if [ -n "${SPECSHIM_CONTAINERD_1_7_DIR:-}" ] && [ -n "${SPECSHIM_CONTAINERD_2_DIR:-}" ]; then
  log "containerd 1.7 and 2.x given: $SPECSHIM_CONTAINERD_1_7_DIR, $SPECSHIM_CONTAINERD_2_DIR"
  exit 0
fi

missing=()
for entry in "${TIERS[@]}"; do
  read -r tier suite <<<"$entry"
  have_tier "$CACHE/containerd-$tier" || missing+=("$tier $suite")
done
if [ "${#missing[@]}" -eq 0 ]; then
  log "containerd 1.7 and 2.x already in $CACHE"
  exit 0
fi

suites=""
for entry in "${missing[@]}"; do
  read -r _ suite <<<"$entry"
  suites="$suites $suite"
done
log "downloading containerd ($suites ) from the machine's Debian mirror"
apt_dir="$CACHE/apt"
# shellcheck disable=SC2086 # one word per suite
private_apt "$apt_dir" $suites
for entry in "${missing[@]}"; do
  read -r tier suite <<<"$entry"
  rm -f "$apt_dir/debs"/*.deb
  (cd "$apt_dir/debs" && apt-get "${APT_OPTS[@]}" download "containerd/$suite" >/dev/null) ||
    die "apt-get download containerd/$suite failed"
  deb=$(ls "$apt_dir/debs"/containerd_*.deb)
  target="$CACHE/containerd-$tier"
  rm -rf "$target.new"
  dpkg-deb -x "$deb" "$target.new"
  have_tier "$target.new" || die "$deb has no containerd, ctr and containerd-shim-runc-v2"
  rm -rf "$target" && mv "$target.new" "$target"
  log "containerd $tier: $("$target/usr/bin/containerd" --version)"
  rm -f "$deb"
done
# The package lists are only needed for this download.
rm -rf "$apt_dir/lists"
