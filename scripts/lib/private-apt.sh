# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# private-apt.sh, sourced by fetch-containerd.sh and fetch-runtimes.sh: an apt
# with a state directory of its own, reading other Debian suites from the
# mirror the machine's apt sources already use. Nothing of the system's apt
# or dpkg state is read or written. The caller defines die MESSAGE.

# debian_mirror prints the URI of the Debian archive that serves this
# machine's own release, as apt reports its configured sources (one-line and
# deb822 files alike).
debian_mirror() {
  local codename
  # shellcheck disable=SC1091
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || die "/etc/os-release names no VERSION_CODENAME"
  # shellcheck disable=SC2016 # apt's own $(FIELD) syntax
  apt-get indextargets --format '$(RELEASE) $(ORIGIN) $(REPO_URI)' 2>/dev/null |
    awk -v want="$codename" '$1 == want && $2 == "Debian" { print $3; exit }'
}

# private_apt DIR SUITE... prepares DIR for an apt that reads SUITE... (main)
# from debian_mirror, fills the array APT_OPTS with the options that make apt
# use only DIR (its own lists, cache and sources, no dpkg status, so nothing
# counts as installed, no preferences), sets APT_MIRROR, and updates the lists.
private_apt() {
  local dir=$1
  shift
  APT_MIRROR=$(debian_mirror)
  [ -n "$APT_MIRROR" ] || die "no Debian archive for this release in apt's sources (apt-get indextargets)"
  mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/sources" "$dir/debs"
  cat >"$dir/sources/specshim-test.sources" <<SOURCES
Types: deb
URIs: $APT_MIRROR
Suites: $*
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  APT_OPTS=(
    -o "Dir::State=$dir" -o "Dir::State::status=/dev/null" -o "Dir::Cache=$dir"
    -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$dir/sources"
    -o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=/dev/null"
    -o "Acquire::Languages=none" -o "APT::Sandbox::User=root" -q
  )
  apt-get "${APT_OPTS[@]}" update >/dev/null || die "apt-get update of $* from $APT_MIRROR failed"
}
