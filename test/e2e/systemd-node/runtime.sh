#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The systemd node's [runtime] path: drops the cpu, memory, pids, hugepage and
# blkio limits from the bundle's config.json, then execs runc with the same
# argv. This host's cgroup2 hierarchy holds no controllers (they are bound to
# its cgroup v1 hierarchies), so runc cannot write cpu.weight or memory.max
# in the node; devices, the one thing under test, need none. A node of its
# own has them, and this wrapper does not exist there.
set -euo pipefail
# The runc the test chose (the harness writes its path), else the tree's 1.1.5.
runtime=$(cat /etc/specshim-node/runc 2>/dev/null || echo /usr/sbin/runc)
bundle=""
prev=""
for a in "$@"; do
  case $prev in --bundle | -b) bundle=$a ;; esac
  case $a in --bundle=*) bundle=${a#--bundle=} ;; esac
  prev=$a
done
case " $* " in
  *" create "* | *" run "*)
    [ -n "$bundle" ] || bundle=$PWD
    cfg=$bundle/config.json
    if [ -f "$cfg" ]; then
      jq -c 'if .linux.resources then .linux.resources |= del(.cpu, .memory, .pids, .hugepageLimits, .blockIO) else . end' \
        "$cfg" >"$cfg.node-tmp"
      mv "$cfg.node-tmp" "$cfg"
    fi
    ;;
esac
exec "$runtime" "$@"
