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

# mirror: the URI of the Debian archive that serves this machine's own release,
# as apt reports its configured sources (one-line and deb822 files alike).
mirror() {
  local codename
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || die "/etc/os-release names no VERSION_CODENAME"
  # shellcheck disable=SC2016 # apt's own $(FIELD) syntax
  apt-get indextargets --format '$(RELEASE) $(ORIGIN) $(REPO_URI)' 2>/dev/null |
    awk -v want="$codename" '$1 == want && $2 == "Debian" { print $3; exit }'
}

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

uri=$(mirror)
[ -n "$uri" ] || die "no Debian archive for this release in apt's sources (apt-get indextargets)"

apt_dir="$CACHE/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/sources" "$apt_dir/debs"
suites=""
for entry in "${missing[@]}"; do
  read -r _ suite <<<"$entry"
  suites="$suites $suite"
done
cat >"$apt_dir/sources/specshim-test.sources" <<EOF
Types: deb
URIs: $uri
Suites:$suites
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
# apt with nothing of the system's state: its own lists, cache and sources,
# no dpkg status (so no dependency on what is installed), no preferences.
apt_opts=(
  -o "Dir::State=$apt_dir" -o "Dir::State::status=/dev/null" -o "Dir::Cache=$apt_dir"
  -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/sources"
  -o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=/dev/null"
  -o "Acquire::Languages=none" -o "APT::Sandbox::User=root" -q
)
log "downloading containerd from $uri ($suites )"
apt-get "${apt_opts[@]}" update >/dev/null || die "apt-get update of$suites from $uri failed"
for entry in "${missing[@]}"; do
  read -r tier suite <<<"$entry"
  rm -f "$apt_dir/debs"/*.deb
  (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download "containerd/$suite" >/dev/null) ||
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
