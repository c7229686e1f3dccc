# shellcheck shell=bash
# The bundles the benchmarks run creates on, shared by scripts/bench.sh (and
# the cases it sources) and scripts/hot-path-order.sh, so the hot path is
# profiled on the very bundles it is measured on. Sourced from the repo root.

# make_bundle DIR UID: CRI's config.json (test/bench/cri-config.json) with the
# process's uid and gid, a busybox-like rootfs with root's passwd and group
# entries, and config.orig, the copy a run restores config.json from.
make_bundle() {
  mkdir -p "$1/rootfs/etc"
  printf 'root:x:0:0:root:/root:/bin/sh\n' > "$1/rootfs/etc/passwd"
  printf 'root:x:0:\n' > "$1/rootfs/etc/group"
  jq -c --argjson uid "$2" '.process.user.uid = $uid | .process.user.gid = $uid' test/bench/cri-config.json > "$1/config.json"
  cp "$1/config.json" "$1/config.orig"
}

# cdi_bundle DIR UID DEVICES: make_bundle's, with DEVICES requested by a
# cdi.k8s.io/bench annotation.
cdi_bundle() {
  make_bundle "$1" "$2"
  jq -c --arg d "$3" '.annotations["cdi.k8s.io/bench"] = $d' "$1/config.orig" >"$1/config.json"
  cp "$1/config.json" "$1/config.orig"
}

# env_checkpoint ROOT RESOURCE ENV VALUE ID...: ROOT/device-plugins/
# kubelet_internal_checkpoint, compact as the kubelet's encoding/json writes
# it, with 200 entries of other pods and one for test/bench/cri-config.json's
# pod (container "main", device IDs ID...), every one granting RESOURCE with
# an Allocate answer whose envs are {ENV: VALUE}.
env_checkpoint() {
  local root=$1 resource=$2 key=$3 value=$4 uid answer entries="" ids i
  shift 4
  uid=$(jq -r '.annotations["io.kubernetes.cri.sandbox-uid"]' test/bench/cri-config.json)
  ids=$(printf '"%s",' "$@")
  # A ContainerAllocateResponse: field 1, a map entry of key (1) and value (2),
  # each length-prefixed (all under 128 bytes).
  answer=$(printf "$(printf '\\x0a\\x%02x\\x0a\\x%02x%s\\x12\\x%02x%s' $((4 + ${#key} + ${#value})) \
    "${#key}" "$key" "${#value}" "$value")" | base64 -w0)
  for i in $(seq 200); do
    entries+="{\"PodUID\": \"uid-other-$i\", \"ContainerName\": \"main\", \"ResourceName\": \"$resource\",
               \"DeviceIDs\": {\"0\": [\"device-other-$i\"]}, \"AllocResp\": \"$answer\"},"
  done
  entries+="{\"PodUID\": \"$uid\", \"ContainerName\": \"main\", \"ResourceName\": \"$resource\",
             \"DeviceIDs\": {\"0\": [${ids%,}]}, \"AllocResp\": \"$answer\"}"
  mkdir -p "$root/device-plugins"
  echo "{\"Data\": {\"PodDeviceEntries\": [$entries], \"RegisteredDevices\": null}, \"Checksum\": 1}" |
    jq -c . >"$root/device-plugins/kubelet_internal_checkpoint"
}

# nvidia_env_bundles WORK FAKE [CDI-KEYS]: NVIDIA_VISIBLE_DEVICES against
# nvidia.com/gpu as nvidia-cdi-refresh writes it (spec_nvidia, sourced from
# scripts/bench-cdi-specs.sh: 8 GPUs by index and by UUID, `all`, 4 control
# nodes, the `=void` env edit, 40 library mounts, 3 hooks), 2 GPUs asked for,
# the default chain plus an [[env-devices]] entry for the variable
# (WORK/nv.toml, running FAKE; CDI-KEYS are more lines for its [cdi] table):
#   WORK/nv-outside  `0,1` in a container created outside CRI (ctr, nerdctl
#                    run): outside-kubernetes = "honour" takes the list as it
#                    is, as NVIDIA's runtime does; no kubelet file is read
#   WORK/nv-grant    the device plugin's `GPU-<uuid>,GPU-<uuid>` after the
#                    image's `all`, as the kubelet passes them, checked against
#                    a 201-entry checkpoint whose entry for this pod grants them
nvidia_env_bundles() {
  local work=$1 root="$1/nv-kubelet"
  mkdir -p "$work/nv-cdi"
  spec_nvidia >"$work/nv-cdi/nvidia.yaml"
  local gpus key=NVIDIA_VISIBLE_DEVICES
  gpus="$(nvidia_uuid 0),$(nvidia_uuid 1)"
  env_checkpoint "$root" nvidia.com/gpu "$key" "$gpus" "$(nvidia_uuid 0)" "$(nvidia_uuid 1)"
  printf '[runtime]\npath = "%s"\n\n[cdi]\nspec-dirs = ["%s"]\n%s\n[[env-devices]]\nenv = "%s"\nkind = "nvidia.com/gpu"\nkubelet-root = "%s"\n' \
    "$2" "$work/nv-cdi" "${3:-}" "$key" "$root" >"$work/nv.toml"
  make_bundle "$work/nv-outside" 0
  jq -c '.annotations |= with_entries(select(.key | startswith("io.kubernetes.cri.") | not))
    | .process.env += ["NVIDIA_VISIBLE_DEVICES=0,1"]' "$work/nv-outside/config.orig" >"$work/nv-outside/config.json"
  make_bundle "$work/nv-grant" 0
  jq -c --arg gpus "$gpus" '.process.env += ["NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=" + $gpus]' \
    "$work/nv-grant/config.orig" >"$work/nv-grant/config.json"
  cp "$work/nv-outside/config.json" "$work/nv-outside/config.orig"
  cp "$work/nv-grant/config.json" "$work/nv-grant/config.orig"
}
