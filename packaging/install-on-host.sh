#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# install-on-host.sh: put specshim on a Kubernetes node and register it with
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
#                                            the handler's old BinaryName)
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
readonly BEGIN_MARK="# >>> specshim runtime handler (added by install-on-host.sh; remove with --uninstall) >>>"
readonly END_MARK="# <<< specshim runtime handler <<<"
readonly DROPIN_REL=/etc/containerd/conf.d/specshim.toml

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
# containerd's PATH under systemd, where a relative BinaryName is looked up.
readonly NODE_PATH="/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin"

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
  -h, --help
EOF
}

log() { printf 'specshim-install: %s\n' "$*"; }
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
      -h | --help) usage; exit 0 ;;
      *) usage >&2; die "unknown argument \`$1\`" ;;
    esac
    shift
  done
  case "$BINARY_PATH" in
    *[!A-Za-z0-9/._+-]*) die "--binary-path \`$BINARY_PATH\` may hold only letters, digits and / . _ + -" ;;
    /*) ;;
    *) die "--binary-path \`$BINARY_PATH\` must be absolute" ;;
  esac
  case "$CONTAINERD_CONFIG" in /*) ;; *) die "--containerd-config \`$CONTAINERD_CONFIG\` must be absolute" ;; esac
  case "$HANDLER" in
    "" | *[!A-Za-z0-9_-]*) die "--handler \`$HANDLER\` must be a TOML bare key: only letters, digits, _ and -" ;;
  esac
  case "$CHAIN" in
    0 | 1) ;;
    *) die "SPECSHIM_CHAIN is 0 or 1, not \`$CHAIN\`" ;;
  esac
  case "$CONFIG_VERSION" in
    "" | 2 | 3 | 4) ;;
    *) die "--config-version is 2 (containerd 1.6/1.7), 3 (2.0-2.2) or 4 (2.3 and later), not \`$CONFIG_VERSION\`" ;;
  esac
  if [ "$CHAIN" = 1 ] && [ "$HANDLER" = specshim ]; then
    die "--chain goes with --handler NAME (an existing handler whose BinaryName specshim takes over); the new handler \"specshim\" has no BinaryName to keep"
  fi
  [ -d "$HOST_ROOT" ] || die "host root \`$HOST_ROOT\` is not a directory (mount the node's / there)"
  HOST_ROOT=${HOST_ROOT%/}
}

host() { printf '%s%s' "$HOST_ROOT" "$1"; }

# ---- state file: KEY=VALUE lines written by install, read by uninstall -----

state_get() {
  local file
  file=$(host "$STATE_REL")
  [ -f "$file" ] || return 0
  sed -n "s/^$1=//p" "$file" | tail -n 1
}

state_write() {
  local file
  file=$(host "$STATE_REL")
  mkdir -p "$(dirname "$file")"
  printf '%s\n' "$@" >"$file.tmp"
  mv -f "$file.tmp" "$file"
}

# ---- small file helpers -----------------------------------------------------

RUN_BACKUPS=()
backup() {
  local file=$1 stamp
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
  [ -e "$file.specshim-backup.$stamp" ] || RUN_BACKUPS+=("$file.specshim-backup.$stamp")
  cp -p "$file" "$file.specshim-backup.$stamp"
  log "backed up $(strip_root "$file") to $(strip_root "$file").specshim-backup.$stamp"
}

strip_root() { printf '%s' "${1#"$HOST_ROOT"}"; }

# replace_file TARGET CONTENT_FILE MODE: atomic replace via rename in the same directory.
replace_file() {
  local target=$1 content=$2 mode=$3 tmp
  mkdir -p "$(dirname "$target")"
  tmp="$target.specshim-tmp.$$"
  cp "$content" "$tmp"
  chmod "$mode" "$tmp"
  mv -f "$tmp" "$target"
}

# install_executable SRC DST: DST becomes a 0755 copy of SRC, replaced
# atomically, unless it already has SRC's bytes.
install_executable() {
  if [ -e "$2" ] && cmp -s "$1" "$2"; then
    log "$(strip_root "$2") is up to date"
  else
    replace_file "$2" "$1" 0755
    log "installed $(strip_root "$2")"
  fi
}

ends_with_newline() { [ ! -s "$1" ] || [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ]; }

regex_escape() { printf '%s' "$1" | sed 's/[]\/$*.^[]/\\&/g'; }
repl_escape() { printf '%s' "$1" | sed 's/[\/&]/\\&/g'; }

# ---- containerd config inspection ------------------------------------------

config_version() {
  local cfg=$1 v=""
  [ ! -f "$cfg" ] || v=$(file_version "$cfg")
  # The root's own version wins: a drop-in of another version breaks
  # containerd (see check_versions).
  if [ -n "$v" ] && [ -n "$CONFIG_VERSION" ] && [ "$v" != "$CONFIG_VERSION" ]; then
    die "$(strip_root "$cfg") says version = $v and --config-version says $CONFIG_VERSION; leave --config-version out (it is for a node without a config file, or one without a version line)"
  fi
  if [ -n "$v" ] || [ -n "$CONFIG_VERSION" ]; then
    printf '%s' "${v:-$CONFIG_VERSION}"
    return
  fi
  if [ -f "$cfg" ]; then
    printf '1'
    return
  fi
  # No config file: containerd runs on built-in defaults; ask it for its version.
  local out release major minor
  if [ -n "$VERSION_CMD" ]; then
    out=$($VERSION_CMD 2>/dev/null) || die "\`$VERSION_CMD\` failed; pass --config-version"
  else
    out=$(chroot "$HOST_ROOT" containerd --version 2>/dev/null) ||
      die "no $(strip_root "$cfg") and cannot run the node's containerd --version; pass --config-version 2 (containerd 1.6/1.7), 3 (2.0-2.2) or 4 (2.3 and later)"
  fi
  # "containerd github.com/containerd/containerd/v2 v2.3.4 <commit>": 1.x reads
  # version 2, 2.0-2.2 version 3, 2.3 and later write version 4.
  release=$(printf '%s\n' "$out" | awk '{print $3}' | sed 's/^v//')
  major=${release%%.*} minor=${release#*.} minor=${minor%%.*}
  case "$major.$minor" in
    1.[0-9]*) printf '2' ;;
    2.[012]) printf '3' ;;
    2.[0-9]*) printf '4' ;;
    *) die "cannot tell the containerd version from \`$out\`; pass --config-version" ;;
  esac
}

# file_version FILE prints the top-level `version = N` of a containerd config
# ("" when it has none: containerd reads such a file as version 1).
file_version() {
  awk '/^[[:space:]]*\[/ { exit } /^[[:space:]]*version[[:space:]]*=[[:space:]]*[0-9]/ { sub(/^[^=]*=[[:space:]]*/, ""); sub(/[^0-9].*/, ""); print; exit }' "$1"
}

# check_versions CFG VERSION refuses an imported file of a higher config
# version than the root's: containerd 2.3.0-2.3.4 refuse to start, 2.0-2.2
# migrate the root over it and lose its CRI settings.
check_versions() {
  local cfg=$1 root=$2 f v
  [ -f "$cfg" ] || return 0
  while IFS= read -r f; do
    v=$(file_version "$f")
    [ -n "$v" ] || continue
    if [ "$v" -gt "$root" ]; then
      die "$(strip_root "$f") (imported by $CONTAINERD_CONFIG) is containerd config version $v, higher than the root config's version $root: containerd 2.3.0-2.3.4 refuse to start (\"drop-in config version $v higher than root config version $root\") and 2.0-2.2 lose the root's CRI settings. Give the two files the same version, then run again"
    fi
  done < <(import_files "$cfg")
}

uses_systemd_cgroup() {
  [ -f "$1" ] && grep -Eq '^[[:space:]]*SystemdCgroup[[:space:]]*=[[:space:]]*true' "$1"
}

# The handler snippet as this node needs it: BinaryName pointing at the
# installed binary, and SystemdCgroup when the node's runc handler uses it.
render_snippet() {
  local src=$1 cfg=$2
  [ -f "$src" ] || die "snippet \`$src\` missing from the source root"
  grep -q '^[[:space:]]*BinaryName = "/usr/bin/specshim"$' "$src" || die "snippet \`$src\` has no BinaryName line"
  if uses_systemd_cgroup "$cfg"; then
    sed "s|^\([[:space:]]*\)BinaryName = \"/usr/bin/specshim\"\$|\1BinaryName = \"$BINARY_PATH\"\n\1SystemdCgroup = true|" "$src"
  else
    sed "s|^\([[:space:]]*\)BinaryName = \"/usr/bin/specshim\"\$|\1BinaryName = \"$BINARY_PATH\"|" "$src"
  fi
}

# ---- install ---------------------------------------------------------------

install_binary() {
  local src="$SOURCE_ROOT/usr/bin/specshim" dst
  dst=$(host "$BINARY_PATH")
  [ -x "$src" ] || die "\`$src\` is missing or not executable"
  if [ -e "$dst" ] && [ "$src" -ef "$dst" ]; then
    log "binary $BINARY_PATH is the package's own; not copied"
    PACKAGE_BINARY=1
    BINARY_INSTALLED=$(state_get binary_installed)
    BINARY_INSTALLED=${BINARY_INSTALLED:-0}
    return
  fi
  install_executable "$src" "$dst"
  BINARY_INSTALLED=1
}

# install_helper puts the kubelet helper (PodResources and device-plugin RPCs
# for the device-plugin modifier) beside the binary: specshim looks for it
# there before its compiled-in libexec dir, which only a node with the .deb
# has. The package's own binary finds the package's helper; nothing to copy.
install_helper() {
  local src="$SOURCE_ROOT/usr/libexec/specshim/specshim-kubelet" dst
  dst=$(host "$(dirname "$BINARY_PATH")/specshim-kubelet")
  HELPER_INSTALLED=$(state_get helper_installed)
  HELPER_INSTALLED=${HELPER_INSTALLED:-0}
  [ "${PACKAGE_BINARY:-0}" = 1 ] && return
  [ -x "$src" ] || die "\`$src\` is missing or not executable"
  install_executable "$src" "$dst"
  HELPER_INSTALLED=1
}

# install_config installs the shipped config, when the node has none; with
# --chain (CHAIN_PATH) its [runtime] path names the handler's old BinaryName.
install_config() {
  local src="$SOURCE_ROOT/etc/specshim/config.toml" dst rendered
  dst=$(host /etc/specshim/config.toml)
  CONFIG_INSTALLED=$(state_get config_installed)
  CONFIG_INSTALLED=${CONFIG_INSTALLED:-0}
  CONFIG_CHAIN_PATH=$(state_get config_chain_path)
  if [ -e "$dst" ]; then
    log "keeping existing /etc/specshim/config.toml"
    return
  fi
  [ -f "$src" ] || die "\`$src\` missing from the source root"
  rendered=$(mktemp)
  render_config "$CHAIN_PATH" >"$rendered"
  replace_file "$dst" "$rendered" 0644
  rm -f "$rendered"
  log "installed /etc/specshim/config.toml${CHAIN_PATH:+ with [runtime] path = \"$CHAIN_PATH\" (--chain)}"
  CONFIG_INSTALLED=1 CONFIG_CHAIN_PATH=$CHAIN_PATH
}

# version 2: append the marked block to the config (create the file if needed).
install_v2() {
  local cfg=$1 block
  block=$(mktemp)
  {
    printf '%s\n' "$BEGIN_MARK"
    render_snippet "$SOURCE_ROOT/usr/share/specshim/containerd/containerd-1.x.toml" "$cfg"
    default_runc_table "$cfg"
    printf '%s\n' "$END_MARK"
  } >"$block"
  if [ -f "$cfg" ] && ! grep -qxF "$BEGIN_MARK" "$cfg" &&
    grep -Eq '^[[:space:]]*\[plugins\."io\.containerd\.grpc\.v1\.cri"\.containerd\.runtimes\.specshim\]' "$cfg"; then
    rm -f "$block"
    die "$(strip_root "$cfg") already defines runtimes.specshim outside specshim's markers; remove it or leave it managed by hand"
  fi
  install_block "$cfg" "$block" "the specshim handler"
  rm -f "$block"
}

# install_block CFG BLOCK WHAT: CFG ends with the marked BLOCK, appended or in
# place of an older one; a missing CFG is created (version 2).
install_block() {
  local cfg=$1 block=$2 what=$3
  if [ -f "$cfg" ] && grep -qxF "$BEGIN_MARK" "$cfg"; then
    if extract_block "$cfg" | cmp -s - "$block"; then
      log "containerd config already has $what"
      return
    fi
    backup "$cfg"
    remove_block "$cfg"
  elif [ -f "$cfg" ]; then
    backup "$cfg"
  else
    mkdir -p "$(dirname "$cfg")"
    printf 'version = 2\n' >"$cfg"
    V2_CREATED=1
  fi
  if ! ends_with_newline "$cfg"; then
    printf '\n' >>"$cfg"
    V2_NEWLINE=1
  fi
  cat "$block" >>"$cfg"
  log "added $what to $(strip_root "$cfg") (containerd 1.x: in place, not as an import)"
  CHANGED=1
}

# default_runc_table prints a runc handler when the node's config relies on
# containerd's built-in one: containerd 1.x drops its built-in handlers as
# soon as the config names any runtime, and the CRI plugin then fails to load
# ("no corresponding runtime configured ... default_runtime_name").
default_runc_table() {
  local cfg=$1 own name
  own=$(mktemp)
  if [ -f "$cfg" ]; then
    sed "/^$(regex_escape "$BEGIN_MARK")\$/,/^$(regex_escape "$END_MARK")\$/d" "$cfg" >"$own"
  fi
  name=$(sed -n 's/^[[:space:]]*default_runtime_name[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$own" | head -n 1)
  name=${name:-runc}
  if grep -Eq "^[[:space:]]*\[plugins\.\"io\.containerd\.grpc\.v1\.cri\"\.containerd\.runtimes\.\"?$name\"?\]" "$own"; then
    rm -f "$own"
    return
  fi
  rm -f "$own"
  [ "$name" = runc ] || die "default_runtime_name \`$name\` has no runtimes table in $(strip_root "$cfg"); fix that first"
  printf '\n# containerd 1.x forgets its built-in runc handler once the config names any\n'
  printf '# runtime; restate it (containerd'"'"'s defaults) so default_runtime_name = "runc" works.\n'
  printf '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
  printf '  runtime_type = "io.containerd.runc.v2"\n'
  if uses_systemd_cgroup "$cfg"; then
    printf '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
    printf '    SystemdCgroup = true\n'
  fi
}

extract_block() { sed -n "/^$(regex_escape "$BEGIN_MARK")\$/,/^$(regex_escape "$END_MARK")\$/p" "$1"; }

# remove_block deletes the marked lines byte-exactly (the file's other bytes,
# including a missing final newline, stay as they are).
remove_block() {
  local cfg=$1 start end tmp
  start=$(grep -bxF "$BEGIN_MARK" "$cfg" | head -n 1 | cut -d: -f1)
  end=$(grep -bxF "$END_MARK" "$cfg" | head -n 1 | cut -d: -f1)
  if [ -z "$start" ] || [ -z "$end" ] || [ "$end" -le "$start" ]; then
    die "$(strip_root "$cfg"): specshim's markers are damaged; remove the block by hand"
  fi
  end=$((end + ${#END_MARK} + 1))
  tmp="$cfg.specshim-tmp.$$"
  { head -c "$start" "$cfg"; tail -c +"$((end + 1))" "$cfg"; } >"$tmp"
  chmod --reference="$cfg" "$tmp"
  mv -f "$tmp" "$cfg"
}

# version 3: the drop-in file plus its entry in the top-level `imports`.
install_v3() {
  local cfg=$1 rendered src="$SOURCE_ROOT/usr/share/specshim/containerd/containerd-2.x.toml"
  rendered=$(mktemp)
  render_snippet "$src" "$cfg" >"$rendered"
  grep -qx 'version = 3' "$rendered" || die "snippet \`$src\` has no line \`version = 3\`"
  # The drop-in has the root's version: 3, or 4 on containerd 2.3 (whose CRI
  # runtime tables are version 3's).
  sed -i "s/^version = 3\$/version = $CONFIG_VER/" "$rendered"
  install_dropin "$cfg" "$rendered"
  rm -f "$rendered"
}

# install_dropin CFG RENDERED: the drop-in gets RENDERED's bytes, and CFG's
# `imports` names it.
install_dropin() {
  local cfg=$1 rendered=$2 dropin path_entry
  dropin=$(host "$DROPIN_REL")
  if [ -f "$dropin" ] && cmp -s "$rendered" "$dropin"; then
    log "drop-in $DROPIN_REL is up to date"
  else
    [ -d "$(dirname "$dropin")" ] || DROPIN_DIR_CREATED=1
    replace_file "$dropin" "$rendered" 0644
    log "installed drop-in $DROPIN_REL"
    CHANGED=1
  fi

  path_entry="\"$DROPIN_REL\""
  if [ ! -f "$cfg" ]; then
    mkdir -p "$(dirname "$cfg")"
    printf 'version = %s\nimports = [%s]\n' "$CONFIG_VER" "$path_entry" >"$cfg"
    IMPORTS_EDIT=created
    log "created $(strip_root "$cfg") importing the drop-in"
    CHANGED=1
    return
  fi
  local line covering
  line=$(imports_line "$cfg")
  covering=$(covering_entry "$cfg")
  if [ -n "$covering" ]; then
    log "$(strip_root "$cfg") imports the drop-in already (\"$covering\"); its bytes stay as they are"
    if [ "${IMPORTS_EDIT:-none}" = none ]; then IMPORTS_EDIT=none IMPORTED_BY=$covering; fi
  elif [ -z "$line" ]; then
    backup "$cfg"
    { printf 'imports = [%s]\n' "$path_entry"; cat "$cfg"; } >"$cfg.specshim-tmp.$$"
    chmod --reference="$cfg" "$cfg.specshim-tmp.$$"
    mv -f "$cfg.specshim-tmp.$$" "$cfg"
    IMPORTS_EDIT=inserted
    log "added an imports line to $(strip_root "$cfg")"
    CHANGED=1
  else
    case "$line" in
      *"imports"*=*"["*) ;;
      *) die "$(strip_root "$cfg"): cannot read its imports line; add $path_entry to it by hand" ;;
    esac
    backup "$cfg"
    sed -i "0,/^\([[:space:]]*imports[[:space:]]*=[[:space:]]*\)\[/s//\1[$(repl_escape "$path_entry"), /" "$cfg"
    IMPORTS_EDIT=prepended
    log "added the drop-in to the imports of $(strip_root "$cfg")"
    CHANGED=1
  fi
}

# imports_line prints the top-level `imports = ...` line (before any table), if any.
imports_line() {
  awk '/^[[:space:]]*\[/ { exit } /^[[:space:]]*imports[[:space:]]*=/ { print; exit }' "$1"
}

# import_entries CFG prints the entries of CFG's top-level `imports`, one a line.
import_entries() {
  local entry
  awk '/^[[:space:]]*\[/ { exit } /^[[:space:]]*imports[[:space:]]*=/ { on = 1 } on { print; if (index($0, "]")) exit }' "$1" |
    sed 's/#.*//' | grep -oE "\"[^\"]*\"|'[^']*'" |
    while IFS= read -r entry; do printf '%s\n' "${entry:1:${#entry}-2}"; done
}

# covers ENTRY: the imports entry ENTRY (a path or a glob, relative to the root
# config's directory) names specshim's drop-in, as containerd's filepath.Glob
# would match it: in the drop-in's directory, by file name.
covers() {
  local entry=$1 dir
  case "$entry" in /*) ;; *) entry="$(dirname "$CONTAINERD_CONFIG")/$entry" ;; esac
  dir=$(realpath -ms -- "$(dirname "$entry")")
  # shellcheck disable=SC2053 # the entry's file name is a glob, matched as one
  [ "$dir" = "$(dirname "$DROPIN_REL")" ] && [[ ${DROPIN_REL##*/} == ${entry##*/} ]]
}

# covering_entry CFG prints the first imports entry of CFG that names the drop-in.
covering_entry() {
  local entry
  while IFS= read -r entry; do
    if covers "$entry"; then
      printf '%s' "$entry"
      return
    fi
  done < <(import_entries "$1")
}

# ---- --handler NAME: specshim as the BinaryName of an existing handler -----
#
# The containerd config is read with toml_records, a line scanner that knows
# TOML's strings, comments, multi-line strings and arrays. One record per table
# header and per key/value line, fields separated by US:
#   LINE US table|array|kv|bad US TABLE US KEY US SEGMENTS US VALUE
# TABLE and KEY are canonical: each key segment double-quoted, joined by dots
# (runc, "runc" and 'runc' are all "runc"); VALUE is the raw text up to a
# comment (for a value spanning lines, its first line).
readonly US=$'\037'
# shellcheck disable=SC2016 # awk's own $0
readonly TOML_AWK='
function skipws(s, i) { while (substr(s, i, 1) == " " || substr(s, i, 1) == "\t") i++; return i }
function parse_key(s, i,    c, j, n, k, part, L) {
  k = ""; n = 0; L = length(s)
  while (1) {
    i = skipws(s, i); c = substr(s, i, 1)
    if (c == "\"") {
      for (j = i + 1; j <= L; j++) { c = substr(s, j, 1); if (c == "\\") { j++; continue } if (c == "\"") break }
      if (j > L) return 0
      part = substr(s, i + 1, j - i - 1); i = j + 1
    } else if (c == "\047") {
      j = index(substr(s, i + 1), "\047"); if (j == 0) return 0
      part = substr(s, i + 1, j - 1); i += j + 1
    } else {
      for (j = i; j <= L && substr(s, j, 1) ~ /[A-Za-z0-9_-]/; j++) ;
      if (j == i) return 0
      part = substr(s, i, j - i); i = j
    }
    k = (n ? k "." : "") "\"" part "\""; n++
    i = skipws(s, i)
    if (substr(s, i, 1) != ".") break
    i++
  }
  KEY = k; NSEG = n; KEND = i; return 1
}
function scan(s, i,    c, j, L) {
  L = length(s)
  while (i <= L) {
    if (ML != "") { j = index(substr(s, i), ML); if (j == 0) return L + 1; i += j + 2; ML = ""; continue }
    c = substr(s, i, 1)
    if (c == "#") return i
    if (substr(s, i, 3) == "\"\"\"" || substr(s, i, 3) == "\047\047\047") { ML = substr(s, i, 3); i += 3; continue }
    if (c == "\"") { for (j = i + 1; j <= L; j++) { c = substr(s, j, 1); if (c == "\\") { j++; continue } if (c == "\"") break } i = j + 1; continue }
    if (c == "\047") { j = index(substr(s, i + 1), "\047"); i = j ? i + j + 1 : L + 1; continue }
    if (c == "[") DEPTH++
    else if (c == "]") DEPTH--
    i++
  }
  return L + 1
}
BEGIN { ML = ""; DEPTH = 0; TABLE = ""; US = "\037" }
{
  s = $0; sub(/\r$/, "", s)
  if (ML != "" || DEPTH > 0) { scan(s, 1); next }
  i = skipws(s, 1); c = substr(s, i, 1)
  if (c == "" || c == "#") next
  if (c == "[") {
    arr = substr(s, i, 2) == "[[" ? 1 : 0
    if (!parse_key(s, i + 1 + arr) || substr(s, KEND, 1 + arr) != (arr ? "]]" : "]")) { print NR US "bad"; next }
    j = skipws(s, KEND + 1 + arr)
    if (substr(s, j, 1) != "" && substr(s, j, 1) != "#") { print NR US "bad"; next }
    TABLE = KEY
    print NR US (arr ? "array" : "table") US TABLE US US 0 US
    next
  }
  if (!parse_key(s, i) || substr(s, KEND, 1) != "=") { print NR US "bad"; next }
  j = skipws(s, KEND + 1); e = scan(s, j)
  v = substr(s, j, e - j); sub(/[ \t]+$/, "", v)
  print NR US "kv" US TABLE US KEY US NSEG US v
}'

toml_records() { awk "$TOML_AWK" "$1"; }

# toml_string RAW prints the value of a one-line TOML string without escapes
# ("..." or '...'); fails for anything else.
toml_string() {
  local v
  case "$1" in
    \"*\")
      v=${1#\"} v=${v%\"}
      case "$v" in *[\\\"]*) return 1 ;; esac ;;
    \'*\')
      v=${1#\'} v=${v%\'}
      case "$v" in *\'*) return 1 ;; esac ;;
    *) return 1 ;;
  esac
  printf '%s' "$v"
}

# under A B: path A is B or inside it. above A B: A is a table that holds B
# (the top level, "", holds everything).
under() { [ "$1" = "$2" ] || [[ $1 == "$2".* ]]; }
above() { [ -z "$1" ] || [[ $2 == "$1".* ]]; }

# handler_paths VERSION: the canonical paths of the CRI plugin, the handler
# and its options table in a config of that version, and the handler's table
# as it is written.
handler_paths() {
  local plugin=io.containerd.cri.v1.runtime
  [ "$1" = 2 ] && plugin=io.containerd.grpc.v1.cri
  CRI_PATH="\"plugins\".\"$plugin\""
  H_PATH="$CRI_PATH.\"containerd\".\"runtimes\".\"$HANDLER\""
  O_PATH="$H_PATH.\"options\""
  H_TABLE="plugins.\"$plugin\".containerd.runtimes.$HANDLER"
}

# scan_handler FILE SHOWN: what FILE says about the handler. Sets SCAN_EXISTS
# (1 when anything defines the handler), SCAN_OPTIONS (line of the
# [<handler>.options] header), SCAN_BIN_LINE and SCAN_BIN (the BinaryName line
# under that header and its raw value), SCAN_TYPE (raw runtime_type),
# SCAN_DEFAULT (raw default_runtime_name), SCAN_CRI (1 when FILE sets anything
# of the CRI plugin). Fails with SCAN_ERR when the handler is written in a form
# that is not a plain table with plain keys: inline tables, dotted keys, arrays
# of tables on its path, or a line the scanner cannot read.
scan_handler() {
  local file=$1 shown=$2 n kind table key value full what=""
  SCAN_EXISTS=0 SCAN_OPTIONS="" SCAN_BIN_LINE="" SCAN_BIN="" SCAN_TYPE="" SCAN_DEFAULT="" SCAN_CRI=0 SCAN_ERR=""
  while IFS=$US read -r n kind table key _ value; do
    case "$kind" in
      bad)
        SCAN_ERR="$shown line $n: cannot read \`$(sed -n "${n}p" "$file")\` as TOML; fix it, or set BinaryName = \"$BINARY_PATH\" in [$H_TABLE.options] by hand"
        return 1 ;;
      table | array)
        full=$table
        if [ "$kind" = array ] && { under "$O_PATH" "$full" || under "$full" "$H_PATH"; }; then
          what="an array of tables"
        fi
        [ "$full" = "$O_PATH" ] && SCAN_OPTIONS=$n ;;
      kv)
        full=$key
        [ -n "$table" ] && full="$table.$key"
        if under "$O_PATH" "$full"; then
          what="an inline table"
        elif above "$table" "$H_PATH" && under "$full" "$H_PATH"; then
          what="dotted keys"
        elif [ "$table" = "$H_PATH" ] && under "$full" "$O_PATH"; then
          what="dotted keys"
        elif [ "$table" = "$O_PATH" ] && [ "$key" = '"BinaryName"' ]; then
          SCAN_BIN_LINE=$n SCAN_BIN=$value
        elif [ "$full" = "$H_PATH.\"runtime_type\"" ]; then
          SCAN_TYPE=$value
        elif [ "$full" = "$CRI_PATH.\"containerd\".\"default_runtime_name\"" ]; then
          SCAN_DEFAULT=$value
        fi ;;
    esac
    if [ -n "$what" ]; then
      SCAN_ERR="$shown line $n: \`$(sed -n "${n}p" "$file")\` writes the handler \`$HANDLER\` (or a table above its options) with $what, which install-on-host.sh does not edit. Write it as a [$H_TABLE] table and a [$H_TABLE.options] table of plain keys, then run again"
      return 1
    fi
    under "$full" "$H_PATH" && SCAN_EXISTS=1
    under "$full" "$CRI_PATH" && SCAN_CRI=1
  done < <(toml_records "$file")
  return 0
}

# import_order CFG prints, as host paths, the files containerd loads after the
# root CFG once specshim's drop-in is in place, in containerd's order: the
# entries of `imports` in turn, a glob's matches sorted by bytes
# (filepath.Glob), a file loaded once. The drop-in is first when no entry
# covers it (install-on-host.sh then puts its own entry first); under a
# covering glob it is where its name sorts. One level: imports of imports are
# not followed.
import_order() {
  local cfg=$1 entry pattern f dropin LC_ALL=C
  local -A seen=()
  local -a matches
  dropin=$(host "$DROPIN_REL")
  if [ -z "$(covering_entry "$cfg")" ]; then
    printf '%s\n' "$dropin"
    seen[$dropin]=1
  fi
  while IFS= read -r entry; do
    case "$entry" in
      /*) pattern=$(host "$entry") ;;
      *) pattern=$(host "$(dirname "$CONTAINERD_CONFIG")/$entry") ;;
    esac
    mapfile -t matches < <({
      compgen -G "$pattern" || true
      if covers "$entry"; then printf '%s\n' "$dropin"; fi
    } | sort -u)
    for f in ${matches[@]+"${matches[@]}"}; do
      [ -z "${seen[$f]:-}" ] || continue
      seen[$f]=1
      if [ -f "$f" ] || [ "$f" = "$dropin" ]; then printf '%s\n' "$f"; fi
    done
  done < <(import_entries "$cfg")
}

# import_files CFG prints the files CFG imports (import_order without
# specshim's drop-in).
import_files() {
  local f dropin
  dropin=$(host "$DROPIN_REL")
  while IFS= read -r f; do
    [ "$f" = "$dropin" ] || printf '%s\n' "$f"
  done < <(import_order "$1")
}

# note_default RAW tells, from default_runtime_name's raw value RAW (the last
# one containerd loads), which handler runs pods without a RuntimeClass, when
# it is not the one specshim takes over.
note_default() {
  local name=runc
  if [ -n "$1" ]; then name=$(toml_string "$1") || return 0; fi
  [ "$name" = "$HANDLER" ] ||
    log "note: default_runtime_name is \"$name\": pods without a RuntimeClass run that, not \"$HANDLER\" (a RuntimeClass with handler: $HANDLER selects it)"
}

# check_type refuses a handler whose runtime_type ignores BinaryName.
check_type() {
  local type
  [ -n "$SCAN_TYPE" ] || return 0
  type=$(toml_string "$SCAN_TYPE") || die "$1: cannot read runtime_type $SCAN_TYPE of the handler \`$HANDLER\`"
  case "$type" in
    io.containerd.runc.v2 | io.containerd.runc.v1) ;;
    *) die "$1: the handler \`$HANDLER\` has runtime_type \"$type\", whose shim has no BinaryName; specshim runs under io.containerd.runc.v2 only" ;;
  esac
}

# binary_line LINE KIND [MORE] prints the BinaryName line that install
# writes (KIND replaced or inserted), indented as LINE plus MORE, with LINE's
# CR if it has one.
binary_line() {
  local indent=${1%%[![:space:]]*} cr="" comment
  case "$1" in *$'\r') cr=$'\r' ;; esac
  indent=${indent%$'\r'}${3:-}
  if [ "$2" = inserted ]; then
    comment="# added by install-on-host.sh --handler; --uninstall removes this line"
  else
    comment="# install-on-host.sh --handler: was \"$OLD_BINARY\"; --uninstall restores it"
  fi
  printf '%sBinaryName = "%s"  %s%s' "$indent" "$BINARY_PATH" "$comment" "$cr"
}

b64() { printf '%s' "$1" | base64 -w0; }
unb64() { printf '%s' "$1" | base64 -d; }
lines_of() { wc -l <"$1"; }

# Line edits that keep every other byte, a missing final newline included.
replace_line() {
  local f=$1 n=$2 tmp="$1.specshim-tmp.$$"
  {
    head -n "$((n - 1))" "$f"
    printf '%s' "$3"
    [ "$n" -gt "$(lines_of "$f")" ] || printf '\n'
    tail -n +"$((n + 1))" "$f"
  } >"$tmp"
  chmod --reference="$f" "$tmp"
  mv -f "$tmp" "$f"
}
insert_after() {
  local f=$1 n=$2 tmp="$1.specshim-tmp.$$"
  if [ "$n" -le "$(lines_of "$f")" ]; then
    { head -n "$n" "$f"; printf '%s\n' "$3"; tail -n +"$((n + 1))" "$f"; } >"$tmp"
  else
    { cat "$f"; printf '\n%s' "$3"; } >"$tmp"
  fi
  chmod --reference="$f" "$tmp"
  mv -f "$tmp" "$f"
}
delete_line() {
  local f=$1 n=$2 tmp="$1.specshim-tmp.$$"
  if [ "$n" -le "$(lines_of "$f")" ]; then
    { head -n "$((n - 1))" "$f"; tail -n +"$((n + 1))" "$f"; } >"$tmp"
  else
    head -n "$((n - 1))" "$f" | head -c -1 >"$tmp"
  fi
  chmod --reference="$f" "$tmp"
  mv -f "$tmp" "$f"
}

# check_imports CFG VERSION: an imported file must not take the handler's
# BinaryName out of the drop-in's hands. Version 3 and 4: a file that
# containerd loads before specshim's drop-in may define the handler (the
# drop-in's BinaryName is merged over it, key by key, as over the root's):
# nvidia-ctk's conf.d/99-nvidia.toml sorts before conf.d/specshim.toml. Sets
# IMPORT_DEFINES, IMPORT_BIN (the BinaryName the last such file gives the
# handler), IMPORT_DEFAULT and IMPORT_TYPE (raw default_runtime_name and
# runtime_type, the last ones loaded).
check_imports() {
  local cfg=$1 f shown dropin after=0
  IMPORT_BIN="" IMPORT_DEFAULT="" IMPORT_TYPE=""
  [ -f "$cfg" ] || return 0
  dropin=$(host "$DROPIN_REL")
  while IFS= read -r f; do
    if [ "$f" = "$dropin" ]; then
      after=1
      continue
    fi
    shown="$(strip_root "$f") (imported by $CONTAINERD_CONFIG)"
    scan_handler "$f" "$shown" || die "$SCAN_ERR"
    if [ "$2" = 2 ] && [ "$SCAN_CRI" = 1 ]; then
      die "$shown sets the CRI plugin (io.containerd.grpc.v1.cri): containerd 1.x replaces the root's whole CRI table with that file's, so set BinaryName = \"$BINARY_PATH\" in [$H_TABLE.options] there by hand"
    fi
    if [ -n "$SCAN_BIN_LINE" ]; then
      if [ "$after" = 1 ]; then
        die "$shown line $SCAN_BIN_LINE sets the BinaryName of the handler \`$HANDLER\`, and containerd loads it after $DROPIN_REL, so its value would win over specshim's. Move that setting into $CONTAINERD_CONFIG (or remove it), then run again"
      fi
      IMPORT_BIN=$(toml_string "$SCAN_BIN") ||
        die "$shown line $SCAN_BIN_LINE: cannot read BinaryName = $SCAN_BIN (install-on-host.sh reads a one-line string without escapes)"
    fi
    [ -z "$SCAN_DEFAULT" ] || IMPORT_DEFAULT=$SCAN_DEFAULT
    [ -z "$SCAN_TYPE" ] || IMPORT_TYPE=$SCAN_TYPE
    [ "$SCAN_EXISTS" = 0 ] || IMPORT_DEFINES=1
  done < <(import_order "$cfg")
}

# plan_handler_v2 CFG decides the edit of a version 2 config, changing
# nothing yet. EDIT is
#   replaced  the handler's BinaryName line at EDIT_LINE becomes NEW_LINE
#   inserted  NEW_LINE goes after its options header at EDIT_LINE
#   block     the marked block adds the options table (BLOCK_HANDLER=1: and
#             the handler table, for containerd's built-in runc)
#   none      BinaryName is specshim already, set by someone else
# OLD_BINARY is the BinaryName the handler had ("" for none); OLD_LINE its line.
plan_handler_v2() {
  local cfg=$1 own shown line want prev
  shown=$(strip_root "$cfg")
  prev=$(state_get handler_edit)
  EDIT="" EDIT_LINE="" NEW_LINE="" OLD_LINE="" OLD_BINARY="" BLOCK_HANDLER=0 IMPORT_DEFINES=0
  if [ ! -f "$cfg" ]; then
    [ "$HANDLER" = runc ] || die "no $shown: there is no handler \`$HANDLER\` (only containerd's built-in runc) to make specshim the BinaryName of"
    EDIT=block BLOCK_HANDLER=1
    return
  fi
  if grep -qxF "$BEGIN_MARK" "$cfg" && [ "$prev" != block ]; then
    die "$shown has specshim's marked block (the handler \"specshim\"?), which this install did not write; run install-on-host.sh --uninstall first"
  fi
  own=$(mktemp)
  sed "/^$(regex_escape "$BEGIN_MARK")\$/,/^$(regex_escape "$END_MARK")\$/d" "$cfg" >"$own"
  if ! scan_handler "$own" "$shown"; then
    rm -f "$own"
    die "$SCAN_ERR"
  fi
  rm -f "$own"
  check_type "$shown"
  note_default "$SCAN_DEFAULT"
  case "$prev" in
    replaced | inserted)
      want=$(unb64 "$(state_get handler_line_b64)")
      line=""
      [ -z "$SCAN_BIN_LINE" ] || line=$(sed -n "${SCAN_BIN_LINE}p" "$cfg")
      if [ "$line" != "$want" ]; then
        die "$shown: the BinaryName of the handler \`$HANDLER\` is no longer the line install-on-host.sh wrote (\`$want\`): it was changed since. Run install-on-host.sh --uninstall (it keeps the line as it is now), then install again"
      fi
      EDIT=$prev EDIT_LINE=$SCAN_BIN_LINE
      OLD_BINARY=$(state_get handler_old_binary)
      OLD_LINE=$(unb64 "$(state_get handler_old_line_b64)")
      if [ "$prev" = replaced ]; then NEW_LINE=$(binary_line "$OLD_LINE" replaced); else NEW_LINE=$(binary_line "$line" inserted); fi
      return ;;
    block)
      if grep -qxF "$BEGIN_MARK" "$cfg"; then
        if [ -n "$SCAN_OPTIONS$SCAN_BIN_LINE" ]; then
          die "$shown: [$H_TABLE.options] is now written outside specshim's marked block too; remove one of them, then run again"
        fi
        EDIT=block
        [ "$SCAN_EXISTS" = 1 ] || BLOCK_HANDLER=1
        return
      fi ;;
  esac
  check_imports "$cfg" 2
  if [ -n "$SCAN_BIN_LINE" ]; then
    OLD_BINARY=$(toml_string "$SCAN_BIN") ||
      die "$shown line $SCAN_BIN_LINE: cannot read BinaryName = $SCAN_BIN (install-on-host.sh reads a one-line string without escapes)"
    if [ "$OLD_BINARY" = "$BINARY_PATH" ]; then
      EDIT=none OLD_BINARY=""
      return
    fi
    EDIT=replaced EDIT_LINE=$SCAN_BIN_LINE
    OLD_LINE=$(sed -n "${SCAN_BIN_LINE}p" "$cfg")
    NEW_LINE=$(binary_line "$OLD_LINE" replaced)
  elif [ -n "$SCAN_OPTIONS" ]; then
    EDIT=inserted EDIT_LINE=$SCAN_OPTIONS
    NEW_LINE=$(binary_line "$(sed -n "${SCAN_OPTIONS}p" "$cfg")" inserted "  ")
  elif [ "$SCAN_EXISTS" = 1 ]; then
    EDIT=block
  elif [ "$HANDLER" = runc ]; then
    EDIT=block BLOCK_HANDLER=1
  else
    die "$shown defines no handler \`$HANDLER\` ([$H_TABLE]): --handler names an existing handler (or runc, containerd's built-in one); leave --handler out to add the new handler \"specshim\""
  fi
}

# apply_handler_v2 CFG makes the edit plan_handler_v2 decided.
apply_handler_v2() {
  local cfg=$1 shown block
  shown=$(strip_root "$cfg")
  case "$EDIT" in
    none)
      log "the handler \`$HANDLER\` in $shown runs $BINARY_PATH already (not set by install-on-host.sh); left as it is" ;;
    replaced | inserted)
      if [ "$(sed -n "${EDIT_LINE}p" "$cfg")" = "$NEW_LINE" ]; then
        log "the handler \`$HANDLER\` in $shown runs $BINARY_PATH already"
        return
      fi
      backup "$cfg"
      if [ "$EDIT" = inserted ] && [ "$PREV_EDIT" != inserted ]; then
        insert_after "$cfg" "$EDIT_LINE" "$NEW_LINE"
      else
        replace_line "$cfg" "$EDIT_LINE" "$NEW_LINE"
      fi
      CHANGED=1
      if [ -n "$PREV_EDIT" ]; then
        log "the handler \`$HANDLER\` runs $BINARY_PATH now ($shown line $EDIT_LINE)"
      else
        log_takeover "$shown line $EDIT_LINE"
      fi ;;
    block)
      block=$(mktemp)
      {
        printf '%s\n' "$BEGIN_MARK"
        printf '# specshim as the BinaryName of the handler `%s` (install-on-host.sh --handler %s).\n' "$HANDLER" "$HANDLER"
        if [ "$BLOCK_HANDLER" = 1 ]; then
          printf '# containerd 1.x forgets its built-in runc handler once the config names any\n'
          printf '# runtime: restate it (containerd'"'"'s defaults).\n'
          printf '[%s]\n  runtime_type = "io.containerd.runc.v2"\n' "$H_TABLE"
        fi
        printf '[%s.options]\n  BinaryName = "%s"\n' "$H_TABLE" "$BINARY_PATH"
        printf '%s\n' "$END_MARK"
      } >"$block"
      local before=$CHANGED
      install_block "$cfg" "$block" "BinaryName $BINARY_PATH for the handler \`$HANDLER\`"
      rm -f "$block"
      [ "$CHANGED" = "$before" ] || [ -n "$PREV_EDIT" ] || log_takeover "$shown" ;;
  esac
}

# plan_handler_v3 CFG decides the edit of a version 3 config: the drop-in sets
# the handler's BinaryName and nothing else (containerd 2.x merges it over the
# root's handler key by key); the root keeps its bytes but for its imports
# line. EDIT is dropin (BLOCK_HANDLER=1: the drop-in also states runtime_type,
# for containerd's built-in runc) or none (BinaryName is specshim already, set
# by someone else). OLD_BINARY is the BinaryName the root gives the handler.
plan_handler_v3() {
  local cfg=$1 shown dropin exists=0 default
  shown=$(strip_root "$cfg")
  dropin=$(host "$DROPIN_REL")
  PREV_EDIT=$(state_get handler_edit)
  EDIT="" OLD_BINARY="" BLOCK_HANDLER=0 IMPORT_DEFINES=0
  if [ -z "$PREV_EDIT" ] && [ -f "$dropin" ] && grep -q 'containerd\.runtimes\.specshim\]' "$dropin"; then
    die "$DROPIN_REL registers the handler \"specshim\", which this install did not write; run install-on-host.sh --uninstall first"
  fi
  if [ -f "$cfg" ]; then
    scan_handler "$cfg" "$shown" || die "$SCAN_ERR"
    check_type "$shown"
    exists=$SCAN_EXISTS default=$SCAN_DEFAULT
    if [ -n "$SCAN_BIN_LINE" ]; then
      OLD_BINARY=$(toml_string "$SCAN_BIN") ||
        die "$shown line $SCAN_BIN_LINE: cannot read BinaryName = $SCAN_BIN (install-on-host.sh reads a one-line string without escapes)"
    fi
    check_imports "$cfg" "$CONFIG_VER"
    [ "$IMPORT_DEFINES" = 0 ] || exists=1
    [ -z "$IMPORT_BIN" ] || OLD_BINARY=$IMPORT_BIN
    [ -z "$IMPORT_DEFAULT" ] || default=$IMPORT_DEFAULT
    if [ -n "$IMPORT_TYPE" ]; then
      SCAN_TYPE=$IMPORT_TYPE
      check_type "$shown (with its imports)"
    fi
    note_default "$default"
  fi
  if [ "$OLD_BINARY" = "$BINARY_PATH" ] && [ "$PREV_EDIT" != dropin ]; then
    EDIT=none OLD_BINARY=""
    return
  fi
  [ "$OLD_BINARY" != "$BINARY_PATH" ] || OLD_BINARY=""
  EDIT=dropin
  if [ "$exists" = 0 ]; then
    [ "$HANDLER" = runc ] ||
      die "$shown defines no handler \`$HANDLER\` ([$H_TABLE]): --handler names an existing handler (or runc, containerd's built-in one); leave --handler out to add the new handler \"specshim\""
    BLOCK_HANDLER=1
  fi
}

apply_handler_v3() {
  local cfg=$1 rendered
  if [ "$EDIT" = none ]; then
    log "the handler \`$HANDLER\` in $(strip_root "$cfg") runs $BINARY_PATH already (not set by install-on-host.sh); left as it is"
    return
  fi
  rendered=$(mktemp)
  {
    printf '# specshim as the BinaryName of containerd'"'"'s existing runtime handler `%s`,\n' "$HANDLER"
    printf '# written by install-on-host.sh --handler %s; --uninstall removes this file\n' "$HANDLER"
    printf '# and its entry in the imports of %s.\n' "$CONTAINERD_CONFIG"
    printf '# containerd 2.x merges imported files key by key: every other setting of the\n'
    printf '# handler stays as the root config (and the files it imports before this one)\n'
    printf '# has it.\n'
    printf 'version = %s\n\n' "$CONFIG_VER"
    if [ "$BLOCK_HANDLER" = 1 ]; then
      printf '# The root config relies on containerd'"'"'s built-in runc handler: state its runtime_type.\n'
      printf '[%s]\n  runtime_type = "io.containerd.runc.v2"\n\n' "$H_TABLE"
    fi
    printf '[%s.options]\n  BinaryName = "%s"\n' "$H_TABLE" "$BINARY_PATH"
  } >"$rendered"
  install_dropin "$cfg" "$rendered"
  rm -f "$rendered"
  [ -n "$PREV_EDIT" ] || log_takeover "$DROPIN_REL"
}

# log_takeover WHERE says what became of the handler's old BinaryName.
log_takeover() {
  if [ -z "$OLD_BINARY" ]; then
    log "the handler \`$HANDLER\` runs $BINARY_PATH ($1); it had no BinaryName of its own (containerd ran runc)"
  elif [ -n "$CHAIN_PATH" ]; then
    log "the handler \`$HANDLER\`: BinaryName \"$OLD_BINARY\" replaced by $BINARY_PATH ($1), which runs $CHAIN_PATH in place of runc (--chain)"
  else
    log "the handler \`$HANDLER\`: BinaryName \"$OLD_BINARY\" replaced by $BINARY_PATH ($1); \"$OLD_BINARY\" no longer runs (specshim runs runc; --chain would keep it after specshim)"
  fi
}

# config_runtime_path CONF prints [runtime] path of a specshim config ("" if unset).
config_runtime_path() {
  local n kind table key value
  while IFS=$US read -r n kind table key _ value; do
    [ "$kind" = kv ] || continue
    if { [ "$table" = '"runtime"' ] && [ "$key" = '"path"' ]; } || { [ -z "$table" ] && [ "$key" = '"runtime"."path"' ]; }; then
      toml_string "$value"
      return
    fi
  done < <(toml_records "$1")
}

# plan_chain: with --chain, CHAIN_PATH becomes the handler's old BinaryName as
# an absolute node path (a bare name is looked up where containerd's shim
# looks: systemd's PATH), for specshim's [runtime] path. A fresh
# /etc/specshim/config.toml gets it; an existing one is never overwritten, so
# it must say so already.
plan_chain() {
  local conf cur d
  CHAIN_PATH=""
  [ "$CHAIN" = 1 ] || return 0
  if [ -z "$OLD_BINARY" ]; then
    log "--chain: the handler \`$HANDLER\` has no BinaryName of its own (containerd ran runc): nothing to chain; specshim runs runc"
    return 0
  fi
  case "${OLD_BINARY##*/}" in
    specshim*) die "--chain: the handler's BinaryName \"$OLD_BINARY\" is a specshim already; run without --chain" ;;
  esac
  case "$OLD_BINARY" in
    /*) CHAIN_PATH=$OLD_BINARY ;;
    */*) die "--chain: the handler's BinaryName \"$OLD_BINARY\" is a relative path; set [runtime] path to its absolute path in /etc/specshim/config.toml and run without --chain" ;;
    *)
      for d in $NODE_PATH; do
        if [ -x "$(host "$d/$OLD_BINARY")" ]; then
          CHAIN_PATH=$d/$OLD_BINARY
          break
        fi
      done
      [ -n "$CHAIN_PATH" ] ||
        die "--chain: \`$OLD_BINARY\` (the handler's BinaryName) is in none of containerd's PATH directories on the node ($NODE_PATH); set [runtime] path to its absolute path in /etc/specshim/config.toml and run without --chain" ;;
  esac
  case "$CHAIN_PATH" in
    *[!A-Za-z0-9/._+-]*) die "--chain: \`$CHAIN_PATH\` may hold only letters, digits and / . _ + -; set [runtime] path in /etc/specshim/config.toml by hand and run without --chain" ;;
  esac
  conf=$(host /etc/specshim/config.toml)
  [ -e "$conf" ] || return 0
  cur=$(config_runtime_path "$conf") || cur="(unreadable)"
  if [ "$cur" != "$CHAIN_PATH" ]; then
    die "--chain: /etc/specshim/config.toml exists (install-on-host.sh never overwrites it) and its [runtime] path is ${cur:+\"$cur\"}${cur:-not set}; set path = \"$CHAIN_PATH\" in its [runtime] table (the runtime the handler \`$HANDLER\` ran until now) and run again, or run without --chain to have specshim run runc in its place"
  fi
  log "--chain: /etc/specshim/config.toml runs $CHAIN_PATH after specshim already"
}

# render_config CHAIN_PATH prints the shipped config, with [runtime] path set
# to CHAIN_PATH when that is not empty.
render_config() {
  local src="$SOURCE_ROOT/etc/specshim/config.toml"
  if [ -z "$1" ]; then
    cat "$src"
    return
  fi
  grep -qx '\[runtime\]' "$src" || die "\`$src\` has no [runtime] table to set path in"
  awk -v path="$1" '{ print } $0 == "[runtime]" && !done {
    print "# install-on-host.sh --chain: what the containerd handler ran before specshim took its place."
    print "path = \"" path "\""
    done = 1
  }' "$src"
}

# check_handler_switch refuses an install as the other kind of handler than
# the state file records: switching is --uninstall, then install.
check_handler_switch() {
  local prev
  [ -f "$(host "$STATE_REL")" ] || return 0
  prev=$(state_get handler)
  prev=${prev:-specshim}
  [ "$prev" != "$HANDLER" ] || return 0
  die "specshim is installed on this node as $(handler_role "$prev") ($STATE_REL); this run asks for $(handler_role "$HANDLER"). Switch in two steps: install-on-host.sh --uninstall, then install-on-host.sh $(handler_flag "$HANDLER") (DaemonSet: SPECSHIM_MODE=uninstall, roll out, then SPECSHIM_MODE=install with SPECSHIM_HANDLER=$HANDLER)"
}
handler_role() {
  if [ "$1" = specshim ]; then printf 'the new handler "specshim"'; else printf 'the BinaryName of the handler "%s"' "$1"; fi
}
handler_flag() {
  if [ "$1" = specshim ]; then printf 'without --handler'; else printf -- '--handler %s' "$1"; fi
}

# uninstall_handler_line CFG restores the BinaryName line a version 2 install
# replaced (or removes the one it inserted), when nobody changed it since.
uninstall_handler_line() {
  local cfg=$1 edit want line="" old shown
  edit=$(state_get handler_edit)
  case "$edit" in replaced | inserted) ;; *) return 0 ;; esac
  [ -f "$cfg" ] || return 0
  shown=$(strip_root "$cfg")
  HANDLER=$(state_get handler)
  handler_paths 2
  want=$(unb64 "$(state_get handler_line_b64)")
  if scan_handler "$cfg" "$shown" && [ -n "$SCAN_BIN_LINE" ]; then line=$(sed -n "${SCAN_BIN_LINE}p" "$cfg"); fi
  old=$(state_get handler_old_binary)
  if [ "$line" != "$want" ]; then
    log "keeping the BinaryName of the handler \`$HANDLER\` in $shown: it was changed since the install (before install-on-host.sh it was ${old:+\"$old\"}${old:-not set})"
    return 0
  fi
  backup "$cfg"
  if [ "$edit" = replaced ]; then
    replace_line "$cfg" "$SCAN_BIN_LINE" "$(unb64 "$(state_get handler_old_line_b64)")"
    log "restored BinaryName \"$old\" of the handler \`$HANDLER\` in $shown"
  else
    delete_line "$cfg" "$SCAN_BIN_LINE"
    log "removed specshim's BinaryName from the handler \`$HANDLER\` in $shown"
  fi
  CHANGED=1
}

# ---- check before restart ----------------------------------------------------

# node_containerd ARGS runs the node's containerd: chroot into the host root,
# or SPECSHIM_CONTAINERD_CHECK_CMD (a command line, split on blanks).
node_containerd() {
  if [ -n "$CHECK_CMD" ]; then
    # shellcheck disable=SC2086 # a command line, split on purpose
    $CHECK_CMD "$@"
  else
    chroot "$HOST_ROOT" containerd "$@"
  fi
}
check_command() { printf '%s' "${CHECK_CMD:-chroot $HOST_ROOT containerd}"; }

# snapshot_config keeps the bytes of the files a containerd config edit may
# change (the root config, specshim's drop-in) and notes the directories it
# may create, so that restore_config can put the node back as it was.
snapshot_config() {
  local f d i=0
  SNAP_DIR=$(mktemp -d)
  trap 'rm -rf "$SNAP_DIR"' EXIT
  SNAP_FILES=("$(host "$CONTAINERD_CONFIG")" "$(host "$DROPIN_REL")")
  SNAP_NEW_DIRS=()
  for f in "${SNAP_FILES[@]}"; do
    if [ -e "$f" ]; then cp -p "$f" "$SNAP_DIR/$i"; fi
    i=$((i + 1))
    d=$(dirname "$f")
    while [ ! -d "$d" ]; do
      SNAP_NEW_DIRS+=("$d")
      d=$(dirname "$d")
    done
  done
}

restore_config() {
  local f d i=0
  for f in "${SNAP_FILES[@]}"; do
    if [ -e "$SNAP_DIR/$i" ]; then cp -p "$SNAP_DIR/$i" "$f"; else rm -f "$f"; fi
    i=$((i + 1))
  done
  rm -f ${RUN_BACKUPS[@]+"${RUN_BACKUPS[@]}"}
  for d in ${SNAP_NEW_DIRS[@]+"${SNAP_NEW_DIRS[@]}"}; do rmdir "$d" 2>/dev/null || true; done
}

# check_config: the node's containerd reads the changed configuration, over
# the node's paths, before anything restarts it. When it rejects it, the
# files are put back byte for byte and the install stops; when it cannot be
# run (no chroot, another containerd binary name), that is said and the
# install goes on.
check_config() {
  local err errs what
  what="$(check_command) --config $CONTAINERD_CONFIG config dump"
  if ! node_containerd --version >/dev/null 2>&1; then
    log "cannot run the node's containerd ($(check_command) --version failed): the changed configuration is not checked before the restart"
    return 0
  fi
  if err=$(node_containerd --config "$CONTAINERD_CONFIG" config dump 2>&1 >/dev/null); then
    log "the node's containerd reads the changed configuration ($what)"
    return 0
  fi
  restore_config
  errs=$(printf '%s\n' "$err" | grep -v 'level=warning\|level=info' || true)
  die "the node's containerd rejects the changed configuration ($what): ${errs:-$err}
$CONTAINERD_CONFIG and $DROPIN_REL are back as they were; containerd was not restarted"
}

restart_containerd() {
  if [ -z "$RESTART_CMD" ]; then
    log "containerd configuration changed: restart containerd on the node to apply it"
    return
  fi
  log "restarting containerd: $RESTART_CMD"
  sh -c "$RESTART_CMD" || die "restart command failed: $RESTART_CMD"
}

# elf_machine FILE: the machine an ELF file is built for, named as `uname -m`
# names it (x86_64, aarch64), else "ELF machine N" or "no ELF file".
elf_machine() {
  local ident machine
  # e_ident's magic, class, data (1: little-endian), then e_machine at 18.
  read -r -a ident < <(od -An -tu1 -N20 "$1" | tr '\n' ' ')
  if [ "${#ident[@]}" -lt 20 ] || [ "${ident[*]:0:4}" != "127 69 76 70" ]; then
    printf 'no ELF file'
    return
  fi
  if [ "${ident[5]}" = 1 ]; then
    machine=$((ident[18] + 256 * ident[19]))
  else
    machine=$((256 * ident[18] + ident[19]))
  fi
  case "$machine" in
    62) printf x86_64 ;;
    183) printf aarch64 ;;
    *) printf 'ELF machine %s' "$machine" ;;
  esac
}

# check_architecture refuses binaries built for another machine than the
# node's (an arm64 image on an amd64 node, or the reverse), before anything on
# the node changes: containerd would fail every create with "exec format error".
check_architecture() {
  local node f machine
  node=$(uname -m)
  for f in "$SOURCE_ROOT/usr/bin/specshim" "$SOURCE_ROOT/usr/libexec/specshim/specshim-kubelet"; do
    [ -f "$f" ] || continue
    machine=$(elf_machine "$f")
    [ "$machine" = "$node" ] ||
      die "\`$f\` is built for $machine, but this node is $node (uname -m): install the .deb or image built for the node's architecture (docs/deploying.md, \"arm64 nodes\"); nothing was changed"
  done
}

# preflight refuses a source root that lacks what install copies, before the
# containerd config changes.
preflight() {
  local bin="$SOURCE_ROOT/usr/bin/specshim" dst
  dst=$(host "$BINARY_PATH")
  [ -x "$bin" ] || die "\`$bin\` is missing or not executable"
  check_architecture
  if ! { [ -e "$dst" ] && [ "$bin" -ef "$dst" ]; }; then
    [ -x "$SOURCE_ROOT/usr/libexec/specshim/specshim-kubelet" ] ||
      die "\`$SOURCE_ROOT/usr/libexec/specshim/specshim-kubelet\` is missing or not executable"
  fi
  [ -e "$(host /etc/specshim/config.toml)" ] || [ -f "$SOURCE_ROOT/etc/specshim/config.toml" ] ||
    die "\`$SOURCE_ROOT/etc/specshim/config.toml\` missing from the source root"
}

do_install() {
  local cfg version
  cfg=$(host "$CONTAINERD_CONFIG")
  version=$(config_version "$cfg")
  CONFIG_VER=$version
  CHANGED=0 V2_NEWLINE=$(state_get v2_added_newline) V2_CREATED=$(state_get v2_created_config)
  IMPORTS_EDIT=$(state_get imports_edit) DROPIN_DIR_CREATED=$(state_get dropin_dir_created)
  IMPORTED_BY=$(state_get dropin_imported_by)
  CHAIN_PATH="" EDIT="" PREV_EDIT="" OLD_BINARY="" OLD_LINE="" NEW_LINE=""
  case "$version" in
    2 | 3 | 4) ;;
    *) die "$(strip_root "$cfg") is containerd config version $version; specshim supports 2 (containerd 1.6/1.7), 3 (2.0-2.2) and 4 (2.3 and later)" ;;
  esac
  check_handler_switch
  check_versions "$cfg" "$version"
  # With --handler, every refusal comes before the first change on the node.
  if [ "$HANDLER" != specshim ]; then
    handler_paths "$version"
    if [ "$version" = 2 ]; then plan_handler_v2 "$cfg"; else plan_handler_v3 "$cfg"; fi
    plan_chain
  fi
  preflight
  # The containerd config first: the node's containerd checks it before
  # anything else of the node changes.
  snapshot_config
  local handler_state=()
  if [ "$HANDLER" = specshim ]; then
    if [ "$version" = 2 ]; then install_v2 "$cfg"; else install_v3 "$cfg"; fi
  else
    if [ "$version" = 2 ]; then apply_handler_v2 "$cfg"; else apply_handler_v3 "$cfg"; fi
    handler_state=("handler_edit=$EDIT" "handler_old_binary=$OLD_BINARY"
      "handler_old_line_b64=$(b64 "$OLD_LINE")" "handler_line_b64=$(b64 "$NEW_LINE")" "chain_path=$CHAIN_PATH")
  fi
  if [ "$CHANGED" = 1 ]; then check_config; fi
  install_binary
  install_helper
  install_config
  state_write "config_version=$version" "containerd_config=$CONTAINERD_CONFIG" \
    "binary_path=$BINARY_PATH" "binary_installed=$BINARY_INSTALLED" "helper_installed=$HELPER_INSTALLED" \
    "config_installed=$CONFIG_INSTALLED" "config_chain_path=$CONFIG_CHAIN_PATH" \
    "v2_added_newline=${V2_NEWLINE:-0}" "v2_created_config=${V2_CREATED:-0}" \
    "imports_edit=${IMPORTS_EDIT:-none}" "dropin_imported_by=$IMPORTED_BY" "dropin_dir_created=${DROPIN_DIR_CREATED:-0}" \
    "handler=$HANDLER" ${handler_state[@]+"${handler_state[@]}"}
  if [ "$CHANGED" = 1 ]; then restart_containerd; else log "containerd configuration unchanged; no restart"; fi
  if [ "$HANDLER" = specshim ]; then
    log "done: RuntimeClass handler \"specshim\" runs $BINARY_PATH"
  else
    local runtime
    runtime=$(config_runtime_path "$(host /etc/specshim/config.toml)" 2>/dev/null) || runtime=""
    log "done: the handler \"$HANDLER\" runs $BINARY_PATH${runtime:+, which runs $runtime in place of runc ([runtime] path of /etc/specshim/config.toml)}"
  fi
}

# ---- uninstall -------------------------------------------------------------

uninstall_v2() {
  local cfg=$1
  [ -f "$cfg" ] && grep -qxF "$BEGIN_MARK" "$cfg" || return 0
  backup "$cfg"
  remove_block "$cfg"
  if [ "$(state_get v2_added_newline)" = 1 ] && ends_with_newline "$cfg" && [ -s "$cfg" ]; then
    truncate -s -1 "$cfg"
  fi
  if [ "$(state_get v2_created_config)" = 1 ] && [ "$(cat "$cfg")" = "version = 2" ]; then
    rm -f "$cfg" "$cfg".specshim-backup.*
  fi
  log "removed the specshim handler from $(strip_root "$cfg")"
  CHANGED=1
}

uninstall_v3() {
  local cfg=$1 version=$2 dropin edit path_entry
  dropin=$(host "$DROPIN_REL")
  path_entry="\"$DROPIN_REL\""
  edit=$(state_get imports_edit)
  if [ -f "$cfg" ]; then
    case "$edit" in
      created)
        if [ "$(cat "$cfg")" = "$(printf 'version = %s\nimports = [%s]' "$version" "$path_entry")" ]; then
          rm -f "$cfg"
        else
          backup "$cfg"
          sed -i "/^imports = \[$(regex_escape "$path_entry")\]\$/d" "$cfg"
        fi
        CHANGED=1 ;;
      inserted)
        backup "$cfg"
        sed -i "0,/^imports = \[$(regex_escape "$path_entry")\]\$/{//d}" "$cfg"
        CHANGED=1 ;;
      prepended)
        backup "$cfg"
        sed -i "0,/^\([[:space:]]*imports[[:space:]]*=[[:space:]]*\)\[$(regex_escape "$path_entry"), /s//\1[/" "$cfg"
        CHANGED=1 ;;
    esac
  fi
  if [ -e "$dropin" ]; then
    rm -f "$dropin"
    [ "$(state_get dropin_dir_created)" = 1 ] && rmdir "$(dirname "$dropin")" 2>/dev/null || true
    log "removed drop-in $DROPIN_REL"
    CHANGED=1
  fi
}

do_uninstall() {
  local state cfg version bin helper conf
  state=$(host "$STATE_REL")
  if [ ! -f "$state" ]; then
    log "nothing to uninstall: no $STATE_REL on the node"
    return
  fi
  CONTAINERD_CONFIG=$(state_get containerd_config)
  cfg=$(host "$CONTAINERD_CONFIG")
  version=$(state_get config_version)
  CHANGED=0
  case "$version" in
    2)
      uninstall_v2 "$cfg"
      uninstall_handler_line "$cfg" ;;
    3 | 4) uninstall_v3 "$cfg" "$version" ;;
  esac
  if [ "$CHANGED" = 1 ]; then restart_containerd; fi
  bin=$(host "$(state_get binary_path)")
  if [ "$(state_get binary_installed)" = 1 ] && [ -e "$bin" ]; then
    rm -f "$bin"
    log "removed $(state_get binary_path)"
  fi
  helper=$(host "$(dirname "$(state_get binary_path)")/specshim-kubelet")
  if [ "$(state_get helper_installed)" = 1 ] && [ -e "$helper" ]; then
    rm -f "$helper"
    log "removed $(strip_root "$helper")"
  fi
  conf=$(host /etc/specshim/config.toml)
  if [ "$(state_get config_installed)" = 1 ] && [ -f "$conf" ]; then
    if render_config "$(state_get config_chain_path)" | cmp -s - "$conf"; then
      rm -f "$conf"
      rmdir "$(dirname "$conf")" 2>/dev/null || true
      log "removed /etc/specshim/config.toml"
    else
      log "keeping /etc/specshim/config.toml: it was edited on the node"
    fi
  fi
  rm -f "$state"
  rmdir "$(dirname "$state")" 2>/dev/null || true
  log "uninstalled"
}

main() {
  parse_args "$@"
  case "$MODE" in
    install) do_install ;;
    uninstall) do_uninstall ;;
    *) die "unknown mode \`$MODE\` (SPECSHIM_MODE is install or uninstall)" ;;
  esac
}

main "$@"
