#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A CNI plugin that does nothing, for the e2e harness's `Setup::cni`: a pod
# network namespace (which containerd creates and removes itself) with no
# interface in it but whatever the kernel puts there (a `lo` that stays
# down). It creates no interface, moves nothing, configures nothing and sends
# no traffic. ADD answers, in the version of the config it was given, that
# $CNI_IFNAME has an address from 127.0.0.0/8 (containerd's CRI wants an IP
# for the pod's primary interface; nothing ever uses it). Installed under the
# plugin's type and as `loopback`, the plugin containerd 1.x adds to every pod
# network itself.
conf=$(cat)
case "$CNI_COMMAND" in
ADD)
  # The first cniVersion is the config's own (a prevResult has one too).
  version=$(printf '%s' "$conf" | grep -o '"cniVersion"[[:space:]]*:[[:space:]]*"[^"]*"' | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')
  case "$CNI_IFNAME" in
  lo) address=127.0.0.1/8 ;;
  *) address=127.66.0.2/32 ;;
  esac
  printf '{"cniVersion":"%s","interfaces":[{"name":"%s","sandbox":"%s"}],' "${version:-1.0.0}" "$CNI_IFNAME" "$CNI_NETNS"
  printf '"ips":[{"version":"4","address":"%s","interface":0}]}\n' "$address"
  ;;
VERSION)
  printf '{"cniVersion":"1.0.0","supportedVersions":["0.3.0","0.3.1","0.4.0","1.0.0"]}\n'
  ;;
esac
# DEL, CHECK, GC, STATUS: nothing was made, so nothing to undo or to check.
exit 0
