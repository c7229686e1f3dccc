#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# install-on-host.sh: the DaemonSet's wrapper around `specshim containerd
# configure|unconfigure` (shim/src/containerd/), which holds all the logic
# described below: this script reads its flags and SPECSHIM_* variables and
# execs the package's specshim binary (SPECSHIM_INSTALLER overrides which).
#
# What the verb does: put specshim on a Kubernetes node and register it with
# containerd, as the new runtime handler `specshim` (the default) or, with
# --handler NAME, as the BinaryName of the node's existing handler NAME (the
# default-handler install: --handler runc, for nodes whose pods run without a
# RuntimeClass); --uninstall takes it all back.
#
# It runs in the DaemonSet's privileged container (packaging/kubernetes/
# daemonset.yaml) with the node's / mounted at --host-root, or directly on a
# node with --host-root /. It owns exactly these host paths:
#   <bin-dir>/specshim                       copied from the package (unless already there)
#   <bin-dir>/specshim-kubelet               the kubelet helper, beside the binary, where
#                                            specshim looks for it first
#   /etc/specshim/config.toml                only when absent; never overwritten (with
#                                            --chain, installed with [runtime] path set to
#                                            the handler's old BinaryName), except by the
#                                            site's file that --config names (the old one
#                                            kept as a backup). Whichever file the node will
#                                            have, the package's specshim must load it, or
#                                            nothing on the node changes
#   containerd 2.x (config version 3; 2.3 and later: version 4):
#     /etc/containerd/conf.d/specshim.toml   the drop-in, at the root config's version, plus
#                                            its entry in `imports` unless a glob there covers
#                                            it already (2.2's and 2.3's default root imports
#                                            conf.d/*.toml: then the root keeps every byte);
#                                            with --handler it sets only that handler's
#                                            BinaryName (containerd 2.x merges imports key by
#                                            key; a drop-in of another agent, like
#                                            nvidia-ctk's conf.d/99-nvidia.toml, may define the
#                                            handler when it loads before specshim.toml)
#   containerd 1.6/1.7 (config version 2):
#     a marked block appended to the containerd config; containerd 1.x replaces
#     a plugin's whole table for each imported file, so a drop-in would wipe the
#     node's other CRI settings. With --handler, the handler's BinaryName line is
#     rewritten in place (or added under its options table, or a marked block
#     adds the options table) and the line it replaced is recorded
#   /var/lib/specshim/install-state          what was changed, for --uninstall
# Every edit of the containerd config is preceded by a timestamped backup
# next to it. containerd is restarted only when its configuration changed, and
# only after the node's containerd, when it can be run from the host root
# (chroot HOST_ROOT containerd; SPECSHIM_CONTAINERD_CHECK_CMD replaces that
# command), read the changed files (`containerd --config CFG config dump`):
# when it rejects them, the old bytes are put back and nothing restarts.
# A drop-in always has the root config's version, and an imported file of a
# higher version than the root is refused: on containerd 2.0-2.2 a version 3
# drop-in under a version 2 root drops the root's CRI settings, and 2.3.0-2.3.4
# refuse to start ("drop-in config version N higher than root config version M").
set -euo pipefail

readonly STATE_REL=/var/lib/specshim/install-state

HOST_ROOT=${SPECSHIM_HOST_ROOT:-/host}
SOURCE_ROOT=${SPECSHIM_SOURCE_ROOT:-/}
BINARY_PATH=${SPECSHIM_BINARY_PATH:-/usr/local/bin/specshim}
CONTAINERD_CONFIG=${SPECSHIM_CONTAINERD_CONFIG:-/etc/containerd/config.toml}
CONFIG_VERSION=${SPECSHIM_CONFIG_VERSION:-}
RESTART_CMD=${SPECSHIM_RESTART_CMD:-nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl restart containerd}
VERSION_CMD=${SPECSHIM_CONTAINERD_VERSION_CMD:-}
CHECK_CMD=${SPECSHIM_CONTAINERD_CHECK_CMD:-}
MODE=${SPECSHIM_MODE:-install}
HANDLER=${SPECSHIM_HANDLER:-specshim}
CHAIN=${SPECSHIM_CHAIN:-0}
CONFIG_FILE=${SPECSHIM_CONFIG_FILE:-}

usage() {
  cat <<EOF
usage: install-on-host.sh [--uninstall] [options]

Installs specshim on the node mounted at --host-root and registers the
containerd runtime handler "specshim" (pods select it with a RuntimeClass), or
with --handler NAME makes specshim the BinaryName of the node's existing
handler NAME (--handler runc: every pod without a RuntimeClass). --uninstall
reverses exactly what an earlier install recorded in ${STATE_REL}.

options (environment variable in brackets):
  --uninstall              [SPECSHIM_MODE=uninstall]
  --host-root DIR          the node's / as seen here [SPECSHIM_HOST_ROOT] (default /host)
  --source-root DIR        where the package's files are [SPECSHIM_SOURCE_ROOT] (default /):
                           usr/bin/specshim, usr/libexec/specshim/specshim-kubelet,
                           etc/specshim/config.toml,
                           usr/share/specshim/containerd/containerd-{1,2}.x.toml
  --binary-path PATH       node path of the binary, used as BinaryName
                           [SPECSHIM_BINARY_PATH] (default /usr/local/bin/specshim);
                           give /usr/bin/specshim on a node that has the .deb
  --containerd-config PATH node path of containerd's config
                           [SPECSHIM_CONTAINERD_CONFIG] (default /etc/containerd/config.toml)
  --config-version 2|3|4   containerd config version, when it cannot be read from the
                           config [SPECSHIM_CONFIG_VERSION]; 2 = containerd 1.6/1.7,
                           3 = 2.0-2.2, 4 = 2.3 and later
  --restart-cmd CMD        how to restart containerd [SPECSHIM_RESTART_CMD]
                           (default: nsenter into pid 1, systemctl restart containerd).
                           Before it, the node's containerd (chroot into --host-root)
                           reads the changed config (config dump); if it rejects it,
                           the old files come back and nothing restarts
  --no-restart             change files only; print the restart command instead
  --handler NAME           [SPECSHIM_HANDLER] (default specshim: a new handler "specshim").
                           Any other NAME ([A-Za-z0-9_-]+) is an existing handler of the
                           containerd config (or runc, containerd's built-in one): specshim
                           becomes its BinaryName and every other option of it stays.
                           A BinaryName it had (e.g. nvidia-container-runtime) is replaced,
                           or with --chain run by specshim in place of runc. The handler may
                           be defined in a drop-in that loads before conf.d/specshim.toml,
                           as nvidia-ctk's conf.d/99-nvidia.toml (--handler nvidia)
  --chain                  [SPECSHIM_CHAIN=1] with --handler: keep the handler's old
                           BinaryName as specshim's [runtime] path. A fresh
                           /etc/specshim/config.toml is installed with it; an existing one
                           must already say so (it is never overwritten)
  --config FILE            [SPECSHIM_CONFIG_FILE] the site's specshim config (a ConfigMap's
                           file, say): installed as /etc/specshim/config.toml in place of
                           the node's, which is kept as a backup beside it. Without it, an
                           existing file is never overwritten. Either way, a config that
                           the package's specshim cannot load is refused, naming its line,
                           before anything on the node changes
  -h, --help

The work is done by the package's specshim binary, `specshim containerd configure`
(--uninstall: `specshim containerd unconfigure`; `specshim containerd check` plans
without changing anything): /usr/bin/specshim beside this script's package, else
\$SPECSHIM_SOURCE_ROOT/usr/bin/specshim [SPECSHIM_INSTALLER: the binary to run].
EOF
}

die() {
  printf 'specshim-install: error: %s\n' "$*" >&2
  exit 1
}

parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --uninstall) MODE=uninstall ;;
      --host-root) HOST_ROOT=${2:?--host-root needs a value}; shift ;;
      --source-root) SOURCE_ROOT=${2:?--source-root needs a value}; shift ;;
      --binary-path) BINARY_PATH=${2:?--binary-path needs a value}; shift ;;
      --containerd-config) CONTAINERD_CONFIG=${2:?--containerd-config needs a value}; shift ;;
      --config-version) CONFIG_VERSION=${2:?--config-version needs a value}; shift ;;
      --restart-cmd) RESTART_CMD=${2:?--restart-cmd needs a value}; shift ;;
      --no-restart) RESTART_CMD="" ;;
      --handler) HANDLER=${2:?--handler needs a value}; shift ;;
      --chain) CHAIN=1 ;;
      --config) CONFIG_FILE=${2:?--config needs a value}; shift ;;
      -h | --help) usage; exit 0 ;;
      *) usage >&2; die "unknown argument \`$1\`" ;;
    esac
    shift
  done
  case "$CHAIN" in
    0 | 1) ;;
    *) die "SPECSHIM_CHAIN is 0 or 1, not \`$CHAIN\`" ;;
  esac
}

# installer prints the specshim binary that does the work: SPECSHIM_INSTALLER,
# the package's own (/usr/bin/specshim for /usr/libexec/specshim/install-on-host.sh),
# else the source root's (the script run from a source tree).
installer() {
  local here
  if [ -n "${SPECSHIM_INSTALLER:-}" ]; then
    printf '%s' "$SPECSHIM_INSTALLER"
    return
  fi
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  if [ "$(basename "$here")" = specshim ] && [ -x "$here/../../bin/specshim" ]; then
    printf '%s' "$here/../../bin/specshim"
    return
  fi
  printf '%s' "${SOURCE_ROOT%/}/usr/bin/specshim"
}

main() {
  local verb bin args
  parse_args "$@"
  case "$MODE" in
    install) verb=configure ;;
    uninstall) verb=unconfigure ;;
    *) die "unknown mode \`$MODE\` (SPECSHIM_MODE is install or uninstall)" ;;
  esac
  args=(--host-root "$HOST_ROOT" --source-root "$SOURCE_ROOT" --binary-path "$BINARY_PATH"
    --containerd-config "$CONTAINERD_CONFIG" --handler "$HANDLER")
  [ -z "$CONFIG_VERSION" ] || args+=(--config-version "$CONFIG_VERSION")
  if [ -n "$RESTART_CMD" ]; then args+=(--restart-cmd "$RESTART_CMD"); else args+=(--no-restart); fi
  [ "$CHAIN" = 0 ] || args+=(--chain)
  [ -z "$CONFIG_FILE" ] || args+=(--config "$CONFIG_FILE")
  [ -z "$CHECK_CMD" ] || args+=(--check-cmd "$CHECK_CMD")
  [ -z "$VERSION_CMD" ] || args+=(--version-cmd "$VERSION_CMD")
  bin=$(installer)
  [ -x "$bin" ] || die "\`$bin\` is missing or not executable (set SPECSHIM_INSTALLER to the specshim binary to run)"
  exec "$bin" containerd "$verb" "${args[@]}"
}

main "$@"
