#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# deb_lintian.sh DEB_DIR: runs lintian on the .deb deb_pack.sh packed from this
# build tree into DEB_DIR; any error or warning fails (packaging/debian/
# specshim.lintian-overrides applies). Info-level tags are printed, not fatal.
set -eu
set -- "$1"/specshim_*.deb
dpkg-deb --info "$1"
lintian --fail-on error,warning --pedantic --display-info "$1"
# The examples ship: an Ascend node's config tables and CDI spec, a dev box's
# specshim config, daemon.json and desired-state file, and docs/dind.md.
for f in examples/ascend/config.toml examples/ascend/ascend.yaml examples/dind/config.toml \
  examples/dind/daemon.json examples/dind/hotplug.yaml dind.md; do
  dpkg-deb --contents "$1" | grep -q "usr/share/doc/specshim/$f\$" || { echo "missing from the .deb: $f"; exit 1; }
done
