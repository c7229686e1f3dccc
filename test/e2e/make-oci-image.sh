#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make-oci-image.sh OUT.tar NAME:TAG [BUSYBOX [CMD]]
#
# Writes an OCI image archive (oci-layout, index.json, blobs/sha256/...) of a
# one-layer busybox-static image for `ctr images import`: the e2e tests have no
# registry. Entrypoint `sleep 2147483647` lets the same image serve as the CRI
# sandbox ("pause") image; test containers set their own command. With CMD
# (one word) the image has no entrypoint and runs CMD, as docker.io's busybox
# does (`docker run busybox true` runs true). The layer is
# reproducible (sorted, owner 0, mtime 0), so the digest is stable.
set -eu
out=$1
ref=$2
busybox=${3:-/bin/busybox}
process='"Entrypoint":["/bin/sleep","2147483647"]'
[ -z "${4:-}" ] || process="\"Cmd\":[\"$4\"]"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rootfs=$work/rootfs
mkdir -p "$rootfs/bin" "$rootfs/etc" "$rootfs/tmp" "$rootfs/dev" "$rootfs/proc" "$rootfs/sys" "$rootfs/mnt" "$rootfs/root"
cp "$busybox" "$rootfs/bin/busybox"
for applet in $("$busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$rootfs/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\n' >"$rootfs/etc/group"
chmod 1777 "$rootfs/tmp"

blobs=$work/oci/blobs/sha256
mkdir -p "$blobs"
# add_blob FILE: moves FILE into the blob store, prints "<digest> <size>".
add_blob() {
  d=$(sha256sum "$1" | cut -d' ' -f1)
  s=$(stat -c %s "$1")
  mv "$1" "$blobs/$d"
  echo "$d $s"
}

tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$work/layer.tar" .
read -r layer_digest layer_size <<EOF_
$(add_blob "$work/layer.tar")
EOF_

arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
printf '{"architecture":"%s","os":"linux","config":{"Env":["PATH=/bin"],%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$arch" "$process" "$layer_digest" >"$work/config.json"
read -r config_digest config_size <<EOF_
$(add_blob "$work/config.json")
EOF_

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
  "$config_digest" "$config_size" "$layer_digest" "$layer_size" >"$work/manifest.json"
read -r manifest_digest manifest_size <<EOF_
$(add_blob "$work/manifest.json")
EOF_

printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
  "$manifest_digest" "$manifest_size" "$ref" "${ref##*:}" >"$work/oci/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/oci" -cf "$out" .
