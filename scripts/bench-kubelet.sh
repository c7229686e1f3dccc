#!/usr/bin/env bash
# bench-kubelet.sh [BUILD_DIR]: what the kubelet client costs a create.
# Starts specshim-fake-kubelet (PodResources, one NVIDIA-like plugin, a
# checkpoint) on a temporary kubelet root, then measures
#   1. start-up of an empty program and of the helper alone (exec + static init);
#   2. Get + Allocate through a fresh HelperClient (the shim's path: spawn
#      the helper, two RPCs, kill it), and the in-process gRPC client;
#   3. the RPC-free path: a checkpoint lookup in a 201-entry checkpoint;
#   4. that the specshim binary still maps nothing but libc (or is static).
# Numbers are recorded in docs/kubelet-client.md.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
make -C "$build" -j2 specshim specshim-kubelet specshim-fake-kubelet specshim-kubelet-bench >/dev/null

tmp=$(mktemp -d)
fake_pid=""
cleanup() {
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

alloc='{
  "envs": {"NVIDIA_VISIBLE_DEVICES": "GPU-0b8f3a7c-1111,GPU-0b8f3a7c-2222"},
  "mounts": [{"container_path": "/var/run/nvidia-container-devices/GPU-0b8f3a7c-1111",
              "host_path": "/dev/null", "read_only": true}],
  "devices": [{"container_path": "/dev/nvidia0", "host_path": "/dev/nvidia0", "permissions": "rw"},
              {"container_path": "/dev/nvidiactl", "host_path": "/dev/nvidiactl", "permissions": "rw"}],
  "annotations": {"cdi.k8s.io/nvidia-device-plugin_bench": "k8s.device-plugin.nvidia.com/gpu=GPU-0b8f3a7c-1111"},
  "cdi_devices": ["k8s.device-plugin.nvidia.com/gpu=GPU-0b8f3a7c-1111"]}'
# A busy node's checkpoint: 200 other containers, then the one looked up.
entries=""
for i in $(seq 200); do
  entries+="{\"pod_uid\": \"uid-other-$i\", \"container\": \"main\", \"resource\": \"nvidia.com/gpu\",
             \"devices_by_numa\": {\"0\": [\"GPU-$i\"]}, \"alloc\": $alloc},"
done
entries+="{\"pod_uid\": \"uid-1\", \"container\": \"main\", \"resource\": \"nvidia.com/gpu\",
           \"devices_by_numa\": {\"0\": [\"GPU-0b8f3a7c-1111\"]}, \"alloc\": $alloc}"
cat >"$tmp/fake.json" <<JSON
{
  "kubelet_root": "$tmp/root",
  "pods": [{"namespace": "bench", "name": "pod", "uid": "uid-1",
            "containers": {"main": {"nvidia.com/gpu": ["GPU-0b8f3a7c-1111", "GPU-0b8f3a7c-2222"]}}}],
  "plugins": [{"socket": "nvidia.sock", "devices": ["GPU-0b8f3a7c-1111", "GPU-0b8f3a7c-2222"], "allocate": $alloc}],
  "checkpoint": {"layout": "numa", "entries": [$entries]}
}
JSON
mkfifo "$tmp/ready"
"$build/test/fakes/specshim-fake-kubelet" --config "$tmp/fake.json" >"$tmp/ready" &
fake_pid=$!
read -r line <"$tmp/ready"
[ "$line" = ready ] || { echo "fake kubelet did not start" >&2; exit 1; }

echo "== process start-up: an empty program (this machine's floor), the helper alone (exec + static init)"
printf 'int main(){return 0;}' >"$tmp/empty.c"
cc -O2 -static-libgcc -o "$tmp/empty" "$tmp/empty.c"
hyperfine -N --warmup 30 --runs 400 --style basic "$tmp/empty" "$build/shim/specshim-kubelet --kubelet-root $tmp/root" |
  grep -E 'Benchmark|Time|Range'

echo "== Get + Allocate against the fakes"
"$build/test/bench/specshim-kubelet-bench" --root "$tmp/root" --helper "$build/shim/specshim-kubelet" --mode helper --iterations 300
"$build/test/bench/specshim-kubelet-bench" --root "$tmp/root" --mode grpc --iterations 300
echo "== the RPC-free path: checkpoint lookup ($(wc -c <"$tmp/root/device-plugins/kubelet_internal_checkpoint") bytes, 201 entries)"
"$build/test/bench/specshim-kubelet-bench" --root "$tmp/root" --helper /nonexistent --mode checkpoint --iterations 300

echo "== libraries the specshim binary maps"
ldd "$build/shim/specshim"
echo "== libraries the helper maps"
ldd "$build/shim/specshim-kubelet"
