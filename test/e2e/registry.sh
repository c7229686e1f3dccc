# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
#
# registry.sh, sourced by systemd-node/node.sh and devbox/devbox.sh: what
# each has started and not yet stopped, one file per start in a registry
# directory of its own: the owner's pid (the test process) and the start's
# dir. A start whose owner died (a ctest timeout) is stopped by
# the next start, with the sourcing script's `stop DIR`.

# register REGISTRY DIR: stops the starts whose owner is gone, then records
# DIR as the caller's parent's (the test's).
register() {
  local registry=$1 entry owner dir
  mkdir -p "$registry"
  for entry in "$registry"/*; do
    [ -f "$entry" ] || continue
    read -r owner dir <"$entry" || continue
    if ! kill -0 "$owner" 2>/dev/null; then
      echo "$(basename "$0"): stopping $dir, whose owner (pid $owner) is gone" >&2
      stop "$dir" || true
      rm -f "$entry"
    fi
  done
  echo "$PPID $2" >"$registry/$(basename "$2")"
}

# unregister REGISTRY DIR: DIR is stopped.
unregister() { rm -f "$1/$(basename "$2")"; }
