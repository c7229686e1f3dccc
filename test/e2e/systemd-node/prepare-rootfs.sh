#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# prepare-rootfs.sh TREE: what node.sh does to a fresh debootstrap tree once,
# before it is cached. Its text is part of the cache's name: a change here
# builds the tree anew.
set -euo pipefail
tree=$1
echo specshim-node >"$tree/etc/hostname"
# A fixed machine id: every boot is a later boot of the same machine, so
# systemd-firstboot (which would ask on the console) has nothing to do.
echo 5bd3c7a1e0f94f6c8a2d4b6e9f1a3c5d >"$tree/etc/machine-id"
# Units that have no business in this node: the console getty (no terminal),
# fstab's remount (the overlay is mounted already) and the periodic timers.
for unit in console-getty.service systemd-remount-fs.service systemd-firstboot.service \
  apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer; do
  ln -sf /dev/null "$tree/etc/systemd/system/$unit"
done
# journald keeps its journal in memory (/run): nothing is written below /var.
mkdir -p "$tree/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$tree/etc/systemd/journald.conf.d/specshim-node.conf"
# containerd's state lives in a tmpfs of the node (overlayfs cannot be the
# upper layer of the snapshots containerd's overlayfs snapshotter mounts).
mkdir -p "$tree/etc/systemd/system"
cat >"$tree/etc/systemd/system/var-lib-containerd.mount" <<'UNIT'
[Unit]
Description=containerd's root, in memory
Before=containerd.service

[Mount]
What=tmpfs
Where=/var/lib/containerd
Type=tmpfs
Options=mode=0711,size=1g

[Install]
WantedBy=local-fs.target
UNIT
mkdir -p "$tree/etc/systemd/system/local-fs.target.wants"
ln -sf ../var-lib-containerd.mount "$tree/etc/systemd/system/local-fs.target.wants/var-lib-containerd.mount"
