# shellcheck shell=bash
# Sourced by scripts/bench.sh (which defines $build, $work, $fake, $shim,
# make_bundle, bench, bench_prepared and row): more cases from components.
# Each block appends commands to extra_cases and table rows to extra_rows.

# device-plugin: creates against specshim-fake-kubelet (one pod, one plugin,
# a 201-entry checkpoint), the helper next to the binary doing the RPCs:
#   nothing held       the kubelet provider reads the checkpoint, finds nothing
#   checkpoint answer  the container's own entry is merged, no RPC
#   Get + Allocate     a sibling's direct request: helper start, Get, Allocate
dp_fake_bin="$PWD/$build/test/fakes/specshim-fake-kubelet"
if [ -x "$dp_fake_bin" ] && [ -x "$PWD/$build/shim/specshim-kubelet" ]; then
  dp_root="$work/kubelet"
  dp_uid=$(jq -r '.annotations["io.kubernetes.cri.sandbox-uid"]' test/bench/cri-config.json)
  dp_answer='{"envs": {"VISIBLE": "GPU-bench-1"},
    "mounts": [{"container_path": "/var/run/devices/GPU-bench-1", "host_path": "/dev/null", "read_only": true}],
    "devices": [{"container_path": "/dev/gpu0", "host_path": "/dev/null", "permissions": "rw"}],
    "cdi_devices": ["example.com/gpu=GPU-bench-1"]}'
  dp_entries=""
  for i in $(seq 200); do
    dp_entries+="{\"pod_uid\": \"uid-other-$i\", \"container\": \"main\", \"resource\": \"example.com/gpu\",
                  \"devices_by_numa\": {\"0\": [\"GPU-other-$i\"]}, \"alloc\": $dp_answer},"
  done
  dp_entries+="{\"pod_uid\": \"$dp_uid\", \"container\": \"main\", \"resource\": \"example.com/gpu\",
                \"devices_by_numa\": {\"0\": [\"GPU-bench-1\"]}, \"alloc\": $dp_answer}"
  cat >"$work/dp-fake.json" <<JSON
{"kubelet_root": "$dp_root",
 "pods": [{"namespace": "default", "name": "bench-pod", "uid": "$dp_uid",
           "containers": {"main": {"example.com/gpu": ["GPU-bench-1", "GPU-bench-2"]}}}],
 "plugins": [{"socket": "gpu.sock", "devices": ["GPU-bench-1", "GPU-bench-2"], "allocate": $dp_answer}],
 "checkpoint": {"layout": "numa", "entries": [$dp_entries]}}
JSON
  mkfifo "$work/dp-ready"
  "$dp_fake_bin" --config "$work/dp-fake.json" >"$work/dp-ready" &
  dp_fake_pid=$!
  trap 'kill "$dp_fake_pid" 2>/dev/null; wait "$dp_fake_pid" 2>/dev/null; rm -rf "$work"' EXIT
  read -r dp_line <"$work/dp-ready"
  [ "$dp_line" = ready ] || { echo "specshim-fake-kubelet did not start" >&2; exit 1; }

  cat >"$work/dp.toml" <<TOML
[runtime]
path = "$fake"
[device-plugin]
enabled = true
kubelet-root = "$dp_root"
[[device-plugin.resources]]
name = "example.com/gpu"
socket = "gpu.sock"
allocate = true
providers = ["kubelet", "direct"]
TOML
  dp_set() {  # dir jq-filter: rewrite the bundle's config and its restore copy
    jq -c "$2" "$1/config.json" >"$1/config.orig" && cp "$1/config.orig" "$1/config.json"
  }
  make_bundle "$work/dp-nothing" 0
  dp_set "$work/dp-nothing" '.annotations["io.kubernetes.cri.sandbox-uid"] = "uid-without-devices"'
  make_bundle "$work/dp-checkpoint" 0
  make_bundle "$work/dp-allocate" 0
  dp_set "$work/dp-allocate" '.annotations |= (with_entries(select(.key | startswith("io.kubernetes.cri.") | not))
    + {"specshim.io/pod": "default/bench-pod", "example.com/gpu": "[\"GPU-bench-2\"]"})'

  dp_create() { echo "$shim --log $work/$1/log.json --log-format json create --bundle $work/$1 id"; }
  extra_cases+=(
    'bench create-dp-nothing "$work/dp.toml" "$(dp_create dp-nothing)"'
    'bench_prepared create-dp-checkpoint "$work/dp.toml" "cp $work/dp-checkpoint/config.orig $work/dp-checkpoint/config.json" "$(dp_create dp-checkpoint)"'
    'bench_prepared create-dp-allocate "$work/dp.toml" "cp $work/dp-allocate/config.orig $work/dp-allocate/config.json" "$(dp_create dp-allocate)"'
  )
  extra_rows+=(
    'row "create, device-plugin: nothing held (checkpoint read) → fake" create-dp-nothing fake'
    'row "create, device-plugin: checkpoint answer merged → fake" create-dp-checkpoint fake'
    'row "create, device-plugin: helper + Get + Allocate → fake" create-dp-allocate fake'
  )
fi
