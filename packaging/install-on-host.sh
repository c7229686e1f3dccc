#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# install-on-host.sh: put specshim on a Kubernetes node and register it with
# containerd as the runtime handler `specshim`; --uninstall takes it all back.
#
# It runs in the DaemonSet's privileged container (packaging/kubernetes/
# daemonset.yaml) with the node's / mounted at --host-root, or directly on a
# node with --host-root /. It owns exactly these host paths:
#   <bin-dir>/specshim                       copied from the package (unless already there)
#   <bin-dir>/specshim-kubelet               the kubelet helper, beside the binary, where
#                                            specshim looks for it first
#   /etc/specshim/config.toml                only when absent; never overwritten
#   containerd 2.x (config version 3):
#     /etc/containerd/conf.d/specshim.toml   the drop-in, plus its entry in `imports`
#   containerd 1.6/1.7 (config version 2):
#     a marked block appended to the containerd config; containerd 1.x replaces
#     a plugin's whole table for each imported file, so a drop-in would wipe the
#     node's other CRI settings
#   /var/lib/specshim/install-state          what was changed, for --uninstall
# Every edit of the containerd config is preceded by a timestamped backup
# next to it. containerd is restarted only when its configuration changed.
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
MODE=${SPECSHIM_MODE:-install}

usage() {
  cat <<EOF
usage: install-on-host.sh [--uninstall] [options]

Installs specshim on the node mounted at --host-root and registers the
containerd runtime handler "specshim". --uninstall reverses exactly what an
earlier install recorded in ${STATE_REL}.

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
  --config-version 2|3     containerd config version, when it cannot be read from the
                           config [SPECSHIM_CONFIG_VERSION]; 2 = containerd 1.6/1.7, 3 = 2.x
  --restart-cmd CMD        how to restart containerd [SPECSHIM_RESTART_CMD]
                           (default: nsenter into pid 1, systemctl restart containerd)
  --no-restart             change files only; print the restart command instead
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

backup() {
  local file=$1 stamp
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
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
  local cfg=$1 v
  if [ -n "$CONFIG_VERSION" ]; then
    printf '%s' "$CONFIG_VERSION"
    return
  fi
  if [ -f "$cfg" ]; then
    v=$(sed -n 's/^[[:space:]]*version[[:space:]]*=[[:space:]]*\([0-9]\+\).*/\1/p' "$cfg" | head -n 1)
    [ -n "$v" ] || v=1
    printf '%s' "$v"
    return
  fi
  # No config file: containerd runs on built-in defaults; ask it for its version.
  local out major
  if [ -n "$VERSION_CMD" ]; then
    out=$($VERSION_CMD 2>/dev/null) || die "\`$VERSION_CMD\` failed; pass --config-version"
  else
    out=$(chroot "$HOST_ROOT" containerd --version 2>/dev/null) ||
      die "no $(strip_root "$cfg") and cannot run the node's containerd --version; pass --config-version 2 (containerd 1.6/1.7) or 3 (2.x)"
  fi
  major=$(printf '%s\n' "$out" | awk '{print $3}' | sed 's/^v//; s/\..*//')
  case "$major" in
    1) printf '2' ;;
    2) printf '3' ;;
    *) die "cannot tell the containerd version from \`$out\`; pass --config-version" ;;
  esac
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

install_config() {
  local src="$SOURCE_ROOT/etc/specshim/config.toml" dst
  dst=$(host /etc/specshim/config.toml)
  CONFIG_INSTALLED=$(state_get config_installed)
  CONFIG_INSTALLED=${CONFIG_INSTALLED:-0}
  if [ -e "$dst" ]; then
    log "keeping existing /etc/specshim/config.toml"
    return
  fi
  [ -f "$src" ] || die "\`$src\` missing from the source root"
  replace_file "$dst" "$src" 0644
  log "installed /etc/specshim/config.toml"
  CONFIG_INSTALLED=1
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
  if [ -f "$cfg" ] && grep -qxF "$BEGIN_MARK" "$cfg"; then
    if extract_block "$cfg" | cmp -s - "$block"; then
      log "containerd config already has the specshim handler"
      rm -f "$block"
      return
    fi
    backup "$cfg"
    remove_block "$cfg"
    CHANGED=1
  elif [ -f "$cfg" ] && grep -Eq '^[[:space:]]*\[plugins\."io\.containerd\.grpc\.v1\.cri"\.containerd\.runtimes\.specshim\]' "$cfg"; then
    rm -f "$block"
    die "$(strip_root "$cfg") already defines runtimes.specshim outside specshim's markers; remove it or leave it managed by hand"
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
  rm -f "$block"
  log "added the specshim handler to $(strip_root "$cfg") (containerd 1.x: in place, not as an import)"
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
  local cfg=$1 dropin rendered path_entry
  dropin=$(host "$DROPIN_REL")
  rendered=$(mktemp)
  render_snippet "$SOURCE_ROOT/usr/share/specshim/containerd/containerd-2.x.toml" "$cfg" >"$rendered"
  if [ -f "$dropin" ] && cmp -s "$rendered" "$dropin"; then
    log "drop-in $DROPIN_REL is up to date"
  else
    [ -d "$(dirname "$dropin")" ] || DROPIN_DIR_CREATED=1
    replace_file "$dropin" "$rendered" 0644
    log "installed drop-in $DROPIN_REL"
    CHANGED=1
  fi
  rm -f "$rendered"

  path_entry="\"$DROPIN_REL\""
  if [ ! -f "$cfg" ]; then
    mkdir -p "$(dirname "$cfg")"
    printf 'version = 3\nimports = [%s]\n' "$path_entry" >"$cfg"
    IMPORTS_EDIT=created
    log "created $(strip_root "$cfg") importing the drop-in"
    CHANGED=1
    return
  fi
  local line
  line=$(imports_line "$cfg")
  if [ -z "$line" ]; then
    backup "$cfg"
    { printf 'imports = [%s]\n' "$path_entry"; cat "$cfg"; } >"$cfg.specshim-tmp.$$"
    chmod --reference="$cfg" "$cfg.specshim-tmp.$$"
    mv -f "$cfg.specshim-tmp.$$" "$cfg"
    IMPORTS_EDIT=inserted
    log "added an imports line to $(strip_root "$cfg")"
    CHANGED=1
  elif covers_dropin "$line"; then
    log "$(strip_root "$cfg") already imports the drop-in"
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

covers_dropin() {
  case "$1" in
    *"\"$DROPIN_REL\""* | *"\"/etc/containerd/conf.d/*.toml\""* | *"'/etc/containerd/conf.d/*.toml'"*) return 0 ;;
  esac
  return 1
}

restart_containerd() {
  if [ -z "$RESTART_CMD" ]; then
    log "containerd configuration changed: restart containerd on the node to apply it"
    return
  fi
  log "restarting containerd: $RESTART_CMD"
  sh -c "$RESTART_CMD" || die "restart command failed: $RESTART_CMD"
}

do_install() {
  local cfg version
  cfg=$(host "$CONTAINERD_CONFIG")
  version=$(config_version "$cfg")
  CHANGED=0 V2_NEWLINE=$(state_get v2_added_newline) V2_CREATED=$(state_get v2_created_config)
  IMPORTS_EDIT=$(state_get imports_edit) DROPIN_DIR_CREATED=$(state_get dropin_dir_created)
  case "$version" in
    2 | 3) ;;
    *) die "$(strip_root "$cfg") is containerd config version $version; specshim supports 2 (containerd 1.6/1.7) and 3 (2.x)" ;;
  esac
  install_binary
  install_helper
  install_config
  if [ "$version" = 2 ]; then install_v2 "$cfg"; else install_v3 "$cfg"; fi
  state_write "config_version=$version" "containerd_config=$CONTAINERD_CONFIG" \
    "binary_path=$BINARY_PATH" "binary_installed=$BINARY_INSTALLED" "helper_installed=$HELPER_INSTALLED" \
    "config_installed=$CONFIG_INSTALLED" \
    "v2_added_newline=${V2_NEWLINE:-0}" "v2_created_config=${V2_CREATED:-0}" \
    "imports_edit=${IMPORTS_EDIT:-none}" "dropin_dir_created=${DROPIN_DIR_CREATED:-0}"
  if [ "$CHANGED" = 1 ]; then restart_containerd; else log "containerd configuration unchanged; no restart"; fi
  log "done: RuntimeClass handler \"specshim\" runs $BINARY_PATH"
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
  local cfg=$1 dropin edit path_entry
  dropin=$(host "$DROPIN_REL")
  path_entry="\"$DROPIN_REL\""
  edit=$(state_get imports_edit)
  if [ -f "$cfg" ]; then
    case "$edit" in
      created)
        if [ "$(cat "$cfg")" = "$(printf 'version = 3\nimports = [%s]' "$path_entry")" ]; then
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
    2) uninstall_v2 "$cfg" ;;
    3) uninstall_v3 "$cfg" ;;
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
    if cmp -s "$conf" "$SOURCE_ROOT/etc/specshim/config.toml"; then
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
