#!/usr/bin/env bash
# Installs dependencies, builds specshim and runs a busybox container through
# specshim + runc as uid 10001 — a uid the image's /etc/passwd does not know.
# Shows what `specshim dry-run` changes, then what the container sees.
set -euo pipefail
cd "$(dirname "$0")/.."
# SPECSHIM_DEMO_BUILD=DIR: use the specshim already built there (the
# integration test runs this script that way); otherwise set up and build.
build=${SPECSHIM_DEMO_BUILD:-build}
if [ -z "${SPECSHIM_DEMO_BUILD:-}" ]; then
  bash scripts/install-deps.sh
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$(nproc)" --target specshim
fi

demo=$(mktemp -d /tmp/specshim-demo-XXXXXX)
trap 'runc --root "$demo/runc" delete --force specshim-demo >/dev/null 2>&1 || true; rm -rf "$demo"' EXIT
bundle="$demo/bundle"
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/etc" "$bundle/rootfs/tmp" "$bundle/rootfs/proc" "$bundle/rootfs/dev" "$bundle/rootfs/sys"
chmod 1777 "$bundle/rootfs/tmp"
cp /bin/busybox "$bundle/rootfs/bin/busybox"
# Every applet but `busybox` itself (a link to itself would replace the binary with a loop).
for applet in $(/bin/busybox --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$bundle/rootfs/bin/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$bundle/rootfs/etc/passwd"
printf 'root:x:0:\n' > "$bundle/rootfs/etc/group"
(cd "$bundle" && runc spec)
jq '.process.terminal = false | .process.user = {uid: 10001, gid: 10001}
    | .process.args = ["/bin/sh", "-c", "echo \"inside: $(id)\"; echo \"whoami: $(whoami)\""]' \
  "$bundle/config.json" > "$bundle/config.tmp" && mv "$bundle/config.tmp" "$bundle/config.json"

# The config the package installs as /etc/specshim/config.toml, as it ships:
# its defaults find runc on PATH and turn on passwd, cdi and devices-cgroup.
export SPECSHIM_CONFIG="$PWD/packaging/specshim.toml"
echo "== specshim doctor's view of that config"
{ "$build/shim/specshim" doctor || true; } | grep -E '^config|modifiers on'
echo

echo "== specshim dry-run --format diff (what specshim would change)"
"$build/shim/specshim" dry-run --bundle "$bundle" --format diff
echo
echo "== running the container through specshim + runc"
"$build/shim/specshim" --root "$demo/runc" --log "$bundle/log.json" --log-format json run --bundle "$bundle" specshim-demo
echo
echo "== the image's /etc/passwd is unchanged:"
cat "$bundle/rootfs/etc/passwd"
