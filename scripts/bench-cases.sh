# shellcheck shell=bash
# Sourced by scripts/bench.sh (which defines $build, $work, $fake, $shim,
# make_bundle, cdi_bundle (scripts/bench-bundles.sh), create_cmd, bench, bench_prepared, hyperfine_case and row):
# more cases from components.
# Each block appends commands to extra_cases and table rows to extra_rows.

# device-plugin: creates against specshim-fake-kubelet (one pod, one plugin,
# a 201-entry checkpoint), the helper next to the binary doing the RPCs:
#   nothing held       the kubelet provider reads the checkpoint, finds nothing
#   checkpoint answer  the container's own entry is merged, no RPC
#   Get + Allocate     a sibling's direct request: helper start, Get, Allocate
# The answer has no cdi_devices: what CDI costs is measured by its own rows.
dp_fake_bin="$PWD/$build/test/fakes/specshim-fake-kubelet"
if [ -x "$dp_fake_bin" ] && [ -x "$PWD/$build/shim/specshim-kubelet" ]; then
  dp_root="$work/kubelet"
  dp_uid=$(jq -r '.annotations["io.kubernetes.cri.sandbox-uid"]' test/bench/cri-config.json)
  dp_answer='{"envs": {"VISIBLE": "GPU-bench-1"},
    "mounts": [{"container_path": "/var/run/devices/GPU-bench-1", "host_path": "/dev/null", "read_only": true}],
    "devices": [{"container_path": "/dev/gpu0", "host_path": "/dev/null", "permissions": "rw"}]}'
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
  trap 'kill "$dp_fake_pid" 2>/dev/null; wait "$dp_fake_pid" 2>/dev/null; rm -rf "$work" "$disk"' EXIT
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

  extra_cases+=(
    'bench create-dp-nothing "$work/dp.toml" "$(create_cmd $work/dp-nothing)"'
    'bench_prepared create-dp-checkpoint "$work/dp.toml" "cp $work/dp-checkpoint/config.orig $work/dp-checkpoint/config.json" "$(create_cmd $work/dp-checkpoint)"'
    'bench_prepared create-dp-allocate "$work/dp.toml" "cp $work/dp-allocate/config.orig $work/dp-allocate/config.json" "$(create_cmd $work/dp-allocate)"'
  )
  extra_rss+=(
    'rss_row "create, device-plugin: helper + Get + Allocate" "$work/dp.toml" "cp $work/dp-allocate/config.orig $work/dp-allocate/config.json" $(create_cmd $work/dp-allocate)'
  )
  extra_rows+=(
    'row "create, device-plugin: nothing held (checkpoint read) → fake" create-dp-nothing fake'
    'row "create, device-plugin: checkpoint answer merged → fake" create-dp-checkpoint fake'
    'row "create, device-plugin: helper + Get + Allocate → fake" create-dp-allocate fake'
  )
fi

# cdi + passwd: the headline cases with the default chain (passwd, cdi,
# devices-cgroup; device-plugin and requirements off), uid 10001 so passwd
# adds its entry, two devices of an NVIDIA-like spec (8 devices, 40 mounts,
# 3 hooks) requested by annotation:
#   1 spec file        only the kind's file in the dir
#   50 spec files      49 other vendors' files beside it (scanned, not parsed)
source scripts/bench-cdi-specs.sh
CDI_FILES=1 make_dir "$work/cdi-1" "example.com/accel"
make_dir "$work/cdi-50" "example.com/accel"
cdi_conf() {  # name spec-dir
  printf '[runtime]\npath = "%s"\n\n[cdi]\nspec-dirs = ["%s"]\n' "$fake" "$2" >"$work/$1.toml"
}
cdi_conf cdi-1 "$work/cdi-1"
cdi_conf cdi-50 "$work/cdi-50"
cdi_bundle "$work/passwd-cdi2" 10001 "example.com/accel=0,example.com/accel=1"
restore_pc="cp $work/passwd-cdi2/config.orig $work/passwd-cdi2/config.json"
create_pc=$(create_cmd "$work/passwd-cdi2")
# cdi2: only the CDI work, 2 devices from the one NVIDIA-sized YAML spec (uid 0).
cdi_bundle "$work/cdi2" 0 "example.com/accel=0,example.com/accel=1"
restore_cdi2="cp $work/cdi2/config.orig $work/cdi2/config.json"
extra_cases+=(
  'bench_prepared create-cdi2-yaml "$work/cdi-1.toml" "$restore_cdi2" "$(create_cmd "$work/cdi2")"'
  'bench_prepared create-passwd-cdi2 "$work/cdi-1.toml" "$restore_pc" "$create_pc"'
  'bench_prepared create-passwd-cdi2-50 "$work/cdi-50.toml" "$restore_pc" "$create_pc"'
)
extra_rows+=(
  'row "create, 2 CDI devices from one NVIDIA-sized YAML spec ($(du -k "$work"/cdi-1/*.yaml | cut -f1) KiB) → fake" create-cdi2-yaml fake'
  'row "create, passwd + 2 CDI devices (1 spec file) → fake" create-passwd-cdi2 fake'
  'row "create, passwd + 2 CDI devices (50 spec files) → fake" create-passwd-cdi2-50 fake'
)
extra_pairs+=(
  'pair "create, 2 CDI devices from one NVIDIA-sized YAML spec" "$work/cdi-1.toml" "$restore_cdi2" "$(floor_cmd "$work/cdi2")" "$(create_cmd "$work/cdi2")"'
  'pair "create, passwd + 2 CDI devices (50 spec files)" "$work/cdi-50.toml" "$restore_pc" "$(floor_cmd "$work/passwd-cdi2")" "$create_pc"'
)
extra_rss+=(
  'rss_row "create, 2 CDI devices from one NVIDIA-sized YAML spec" "$work/cdi-1.toml" "$restore_cdi2" $(create_cmd "$work/cdi2")'
  'rss_row "create, passwd + 2 CDI devices (50 spec files)" "$work/cdi-50.toml" "$restore_pc" $create_pc'
)

# env-devices: the same 2 devices handed over as ACCEL_VISIBLE_DEVICES=0,1
# (the plugin's env, as the kubelet passes it after the image's `all`),
# checked against a 201-entry checkpoint whose entry for this container's
# pod UID grants "0,1" (no RPC). Paired against the annotation create above
# with the same config, in which env-devices finds no variable.
ev_root="$work/ev-kubelet"
env_checkpoint "$ev_root" example.com/accel ACCEL_VISIBLE_DEVICES 0,1 accel-0 accel-1
{ cat "$work/cdi-1.toml"; printf '\n[[env-devices]]\nenv = "ACCEL_VISIBLE_DEVICES"\nkind = "example.com/accel"\nkubelet-root = "%s"\n' "$ev_root"; } >"$work/ev.toml"
make_bundle "$work/ev2" 0
jq -c '.process.env += ["ACCEL_VISIBLE_DEVICES=all", "ACCEL_VISIBLE_DEVICES=0,1"]' "$work/ev2/config.orig" >"$work/ev2/config.json"
cp "$work/ev2/config.json" "$work/ev2/config.orig"
# hyperfine runs a --prepare command without a shell (-N): one command each.
# The pairs run theirs with sh -c, so the env-list − annotation pair restores
# both bundles in one.
restore_ev2="cp $work/ev2/config.orig $work/ev2/config.json"
restore_ev2_cdi2="$restore_ev2; $restore_cdi2"
extra_cases+=(
  'bench_prepared create-env2 "$work/ev.toml" "$restore_ev2" "$(create_cmd "$work/ev2")"'
)
extra_rows+=(
  'row "create, 2 devices from ACCEL_VISIBLE_DEVICES=0,1, checkpoint (201 entries) read, same spec → fake" create-env2 fake'
)
# Against another build (bench.sh --against) the env list's create runs with
# both builds; otherwise it is set against the same devices by annotation.
if [ -n "$against" ]; then
  extra_pairs+=(
    'pair "create, 2 devices from an env list + checkpoint (201 entries)" "$work/ev.toml" "$restore_ev2" "$(floor_cmd "$work/ev2")" "$(create_cmd "$work/ev2")"'
  )
else
  extra_pairs+=(
    'pair "create, 2 devices from an env list + checkpoint − the same by CDI annotation (env-devices on in both)" "$work/ev.toml" "$restore_ev2_cdi2" "$(create_cmd "$work/cdi2")" "$(create_cmd "$work/ev2")"'
  )
fi

# NVIDIA-sized env-var creates (nvidia_env_bundles, scripts/bench-bundles.sh):
# NVIDIA_VISIBLE_DEVICES against nvidia.com/gpu as nvidia-cdi-refresh writes
# it, 2 GPUs, once with no grant to check and once checked against a
# 201-entry checkpoint.
nvidia_env_bundles "$work" "$fake"
restore_nv_outside="cp $work/nv-outside/config.orig $work/nv-outside/config.json"
restore_nv_grant="cp $work/nv-grant/config.orig $work/nv-grant/config.json"
# Both inject: the GPUs' nodes are in the dry-run's spec.
for b in nv-outside nv-grant; do
  SPECSHIM_CONFIG="$work/nv.toml" "$shim" dry-run --bundle "$work/$b" 2>/dev/null |
    jq -e '[.linux.devices[].path] | index("/dev/nvidia0") and index("/dev/nvidia1") and (index("/dev/nvidia2") | not)' \
      >/dev/null || { echo "bench: $b: NVIDIA_VISIBLE_DEVICES did not inject GPUs 0 and 1" >&2; exit 1; }
done
extra_cases+=(
  'bench_prepared create-nv-outside "$work/nv.toml" "$restore_nv_outside" "$(create_cmd "$work/nv-outside")"'
  'bench_prepared create-nv-grant "$work/nv.toml" "$restore_nv_grant" "$(create_cmd "$work/nv-grant")"'
)
extra_rows+=(
  'row "create, NVIDIA_VISIBLE_DEVICES=0,1 outside CRI, nvidia.com/gpu spec ($(du -k "$work"/nv-cdi/nvidia.yaml | cut -f1) KiB), no grant to check → fake" create-nv-outside fake'
  'row "create, NVIDIA_VISIBLE_DEVICES=<2 UUIDs> checked against a checkpoint (201 entries), same spec → fake" create-nv-grant fake'
)
extra_pairs+=(
  'pair "create, NVIDIA_VISIBLE_DEVICES=0,1 outside CRI, nvidia.com/gpu spec, no grant to check" "$work/nv.toml" "$restore_nv_outside" "$(floor_cmd "$work/nv-outside")" "$(create_cmd "$work/nv-outside")"'
  'pair "create, NVIDIA_VISIBLE_DEVICES=<2 UUIDs> + checkpoint grant (201 entries), nvidia.com/gpu spec" "$work/nv.toml" "$restore_nv_grant" "$(floor_cmd "$work/nv-grant")" "$(create_cmd "$work/nv-grant")"'
)
extra_rss+=(
  'rss_row "create, NVIDIA_VISIBLE_DEVICES=0,1, no grant to check" "$work/nv.toml" "$restore_nv_outside" $(create_cmd "$work/nv-outside")'
  'rss_row "create, NVIDIA_VISIBLE_DEVICES=<2 UUIDs> + checkpoint grant" "$work/nv.toml" "$restore_nv_grant" $(create_cmd "$work/nv-grant")'
)

# hotplug: a 100-entry desired-state file whose last entry selects this
# pod's container (default/bench-pod/main) and gives it /dev/null at
# /dev/hotplug0: the file read and parsed, one node and its rule added, the
# grant file written next to config.json.
hp_file="$work/hotplug.yaml"
{
  echo "containers:"
  for i in $(seq 99); do
    printf '  - pod: {namespace: dev, name: box-%s, container: main}\n    gpus: [GPU-%s]\n' "$i" "$i"
  done
  printf '  - pod: {namespace: default, name: bench-pod, container: main}\n    devices: ["/dev/null:/dev/hotplug0:rw"]\n'
} >"$hp_file"
{ cat "$work/fake.toml"; printf '\n[hotplug]\nenabled = true\ndesired = "%s"\n' "$hp_file"; } >"$work/hp.toml"
make_bundle "$work/hp" 0
extra_pairs+=(
  'pair "create, hotplug: 1 node from a 100-entry desired-state file" "$work/hp.toml" "cp $work/hp/config.orig $work/hp/config.json" "$(floor_cmd "$work/hp")" "$(create_cmd "$work/hp")"'
)

# Scaling: how a create's cost grows with the spec's size, the number of CDI
# spec files in the dir and the number of devices requested. Fewer runs each
# (BENCH_SCALE_RUNS); every row is a create that changes the spec or reads it.
scale_runs=${BENCH_SCALE_RUNS:-100}
bench_scale() { hyperfine_case "$1" "$2" "$scale_runs" 5 "$3" "${@:4}"; }  # name config prepare command

# spec size: N extra env entries in an otherwise unchanged CRI spec (no rewrite).
for n in 0 1000 10000; do
  make_bundle "$work/size-$n" 0
  jq -c --argjson n "$n" '.process.env += [range(0; $n) | "BENCH_VARIABLE_\(.)=/opt/some/moderately/long/value/\(.)"]' \
    "$work/size-$n/config.orig" >"$work/size-$n/config.json"
  cp "$work/size-$n/config.json" "$work/size-$n/config.orig"
done

# spec files: N one-kind-per-file specs; two devices of the last file requested.
# "all parsed": each file also holds a backslash, which defeats the pre-filter
# that skips files unable to define a requested device.
for n in 10 100 1000; do
  mkdir -p "$work/files-$n" "$work/files-$n-parsed"
  for i in $(seq 0 $((n - 1))); do
    f=$(printf 'v%04d.yaml' "$i")
    spec_yaml "vendor$i.example.com/accel" >"$work/files-$n/$f"
    sed 's|ACCEL_DRIVER=550.54.15|ACCEL_NOTE=a\\b|' "$work/files-$n/$f" >"$work/files-$n-parsed/$f"
  done
  cdi_conf "files-$n" "$work/files-$n"
  cdi_conf "files-$n-parsed" "$work/files-$n-parsed"
  cdi_bundle "$work/files-$n-bundle" 0 "vendor$((n - 1)).example.com/accel=0,vendor$((n - 1)).example.com/accel=1"
done

# devices: one spec with 64 devices (a node and an env entry each); 1, 8 or 64 requested.
mkdir -p "$work/many"
{
  printf 'cdiVersion: 0.5.0\nkind: example.com/many\ndevices:\n'
  for i in $(seq 0 63); do
    printf -- '- name: "d%s"\n  containerEdits:\n    env: [DEV_%s=1]\n    deviceNodes:\n    - {path: /dev/many%s, hostPath: /dev/null}\n' \
      "$i" "$i" "$i"
  done
} >"$work/many/many.yaml"
cdi_conf many "$work/many"
for n in 1 8 64; do
  cdi_bundle "$work/devices-$n" 0 "$(seq -s, -f 'example.com/many=d%g' 0 $((n - 1)))"
done

# spec keys: one spec file whose spec-level annotations map has N keys
# (spec_keys), parsed on every run (cache-dir = ""), 2 devices requested from
# it; then the 60,000 keys with the first repeated at the end (the create
# fails), parsed on every run and with the parse cache on, which remembers the
# failure: a create reports it without parsing the file again.
for n in 6000 60000; do
  mkdir -p "$work/keys-$n"
  spec_keys example.com/keys "$n" >"$work/keys-$n/keys.yaml"
  cdi_conf "keys-$n" "$work/keys-$n"
  printf 'cache-dir = ""\n' >>"$work/keys-$n.toml"
done
mkdir -p "$work/keys-broken"
spec_keys example.com/keys 60000 repeat >"$work/keys-broken/keys.yaml"
cdi_conf keys-broken "$work/keys-broken"
cp "$work/keys-broken.toml" "$work/keys-broken-cached.toml"
printf 'cache-dir = ""\n' >>"$work/keys-broken.toml"
printf 'cache-dir = "%s"\n' "$work/keys-cache" >>"$work/keys-broken-cached.toml"
cdi_bundle "$work/keys-bundle" 0 "example.com/keys=0,example.com/keys=1"

scale_cases() {
  local n
  for n in 0 1000 10000; do bench_scale "size-$n" "$work/fake.toml" "" "$(create_cmd "$work/size-$n")"; done
  for n in 10 100 1000; do
    local b="$work/files-$n-bundle" restore="cp $work/files-$n-bundle/config.orig $work/files-$n-bundle/config.json"
    bench_scale "files-$n" "$work/files-$n.toml" "$restore" "$(create_cmd "$b")"
    # All 1,000 parsed takes seconds a run: a few runs say enough.
    hyperfine_case "files-$n-parsed" "$work/files-$n-parsed.toml" "$([ "$n" = 1000 ] && echo 5 || echo "$scale_runs")" \
      1 "$restore" "$(create_cmd "$b")"
  done
  for n in 1 8 64; do
    bench_scale "devices-$n" "$work/many.toml" "cp $work/devices-$n/config.orig $work/devices-$n/config.json" \
      "$(create_cmd "$work/devices-$n")"
  done
  for n in 6000 60000; do
    bench_scale "keys-$n" "$work/keys-$n.toml" "cp $work/keys-bundle/config.orig $work/keys-bundle/config.json" \
      "$(create_cmd "$work/keys-bundle")"
  done
  # These creates fail (exit 1) and change nothing: -i, no restore.
  bench_scale keys-broken "$work/keys-broken.toml" "" -i "$(create_cmd "$work/keys-bundle")"
  bench_scale keys-broken-cached "$work/keys-broken-cached.toml" "" -i "$(create_cmd "$work/keys-bundle")"
}
scale_table() {
  local n
  echo "## How cost grows"
  echo
  echo "Medians over $scale_runs runs each, same run as the table above; \"over fake\" subtracts the fake runtime's median."
  echo "Rows that rewrite config.json include its restore (\`prepare-only\` above) in neither column."
  echo
  echo "| dimension | case | median ms | over fake |"
  echo "|---|---|---|---|"
  for n in 0 1000 10000; do
    echo "| spec size | $n extra env entries ($(($(stat -c %s "$work/size-$n/config.json") / 1024)) KiB), nothing to change | $(med "size-$n") | $(over "size-$n" fake) ms |"
  done
  for n in 10 100 1000; do
    echo "| CDI spec files | $n files ($(du -sk "$work/files-$n" | cut -f1) KiB), 2 devices from the last | $(med "files-$n") | $(over "files-$n" fake) ms |"
    echo "| CDI spec files | $n files, every one parsed$([ "$n" = 1000 ] && echo " (5 runs)") | $(med "files-$n-parsed") | $(over "files-$n-parsed" fake) ms |"
  done
  for n in 1 8 64; do
    echo "| devices | $n of 64 requested from one spec (node + env + cgroup rule each) | $(med "devices-$n") | $(over "devices-$n" fake) ms |"
  done
  for n in 6000 60000; do
    echo "| spec keys | a spec file with a $n-key annotations map ($(du -k "$work/keys-$n/keys.yaml" | cut -f1) KiB), parsed every run, 2 devices | $(med "keys-$n") | $(over "keys-$n" fake) ms |"
  done
  echo "| spec keys | the 60000-key file with its first key repeated at the end, parsed every run (the create fails) | $(med keys-broken) | $(over keys-broken fake) ms |"
  echo "| spec keys | the same broken file, parse cache on: its failure remembered, not parsed again | $(med keys-broken-cached) | $(over keys-broken-cached fake) ms |"
}
extra_cases+=('scale_cases')
extra_sections+=('scale_table')

# hot-plug: attach and detach of a c 1:11 node on a running runc container
# (scripts/bench-attach.sh; root only, real runc and cgroups).
attach_table() {
  echo "## Hot-plug: attach and detach on a running container"
  echo
  echo "\`scripts/bench-attach.sh\`: ${BENCH_ATTACH_RUNS:-50} \`specshim attach --device\` and \`detach --device\` of a c 1:11 node"
  echo "on one running busybox container (real runc), each timed alone as a whole process. Each includes one"
  echo "\`runc state\` (about 5 ms: the \`runc state\` row above), the cgroup rule, a forked child entering the"
  echo "container's mount namespace, and the record's atomic write with its fsyncs."
  echo
  BENCH_RUNS=${BENCH_ATTACH_RUNS:-50} bash scripts/bench-attach.sh "$build"
}
if [ "$(id -u)" = 0 ] && command -v runc >/dev/null; then extra_sections+=('attach_table'); fi
