# shellcheck shell=bash
# NVIDIA-like CDI spec generators shared by scripts/bench-cdi.sh and the CDI
# cases of scripts/bench-cases.sh. Sourced, not run.

# spec_yaml KIND: 8 devices with a node each, spec-level edits with a control
# node, 40 library mounts, 3 hooks and env, as nvidia-ctk generates them. The
# control node is a vendor's companion node (/dev/nvidiactl, base's vendor
# table): any other spec-level node counts toward the grant (docs/trust.md),
# and the env-list cases grant only devices.
spec_yaml() {
  printf 'cdiVersion: 0.5.0\nkind: %s\ndevices:\n' "$1"
  for i in 0 1 2 3 4 5 6 7; do
    printf -- '- name: "%s"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/accel%s\n      hostPath: %s\n' \
      "$i" "$i" "$([ $((i % 2)) -eq 0 ] && echo /dev/null || echo /dev/zero)"
  done
  printf 'containerEdits:\n  env:\n  - ACCEL_DRIVER=550.54.15\n  deviceNodes:\n  - path: /dev/nvidiactl\n    hostPath: /dev/full\n'
  yaml_hooks_mounts accel-ctk "accel-ctk, hook" libaccel-component 550.54.15
}

# yaml_hooks_mounts TOOL ARGS LIB VERSION: the spec-level hooks (3, TOOL run
# with ARGS first) and library mounts (40 of LIB-NN.so.VERSION) of spec_yaml
# and spec_nvidia.
yaml_hooks_mounts() {
  printf '  hooks:\n'
  for h in create-symlinks update-ldcache chmod; do
    printf '  - hookName: createContainer\n    path: /usr/bin/%s\n    args: [%s, %s, --folder, /usr/lib/x86_64-linux-gnu]\n' \
      "$1" "$2" "$h"
  done
  printf '  mounts:\n'
  for i in $(seq 1 40); do
    printf '  - hostPath: /usr/lib/x86_64-linux-gnu/%s-%02d.so.%s\n' "$3" "$i" "$4"
    printf '    containerPath: /usr/lib/x86_64-linux-gnu/%s-%02d.so.%s\n' "$3" "$i" "$4"
    printf '    options: [ro, nosuid, nodev, bind]\n'
  done
}

# spec_json KIND: the same spec as JSON.
spec_json() {
  local devices="" mounts="" hooks=""
  for i in 0 1 2 3 4 5 6 7; do
    devices+="${devices:+,}{\"name\":\"$i\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/accel$i\",\"hostPath\":\"$([ $((i % 2)) -eq 0 ] && echo /dev/null || echo /dev/zero)\"}]}}"
  done
  for h in create-symlinks update-ldcache chmod; do
    hooks+="${hooks:+,}{\"hookName\":\"createContainer\",\"path\":\"/usr/bin/accel-ctk\",\"args\":[\"accel-ctk\",\"hook\",\"$h\",\"--folder\",\"/usr/lib/x86_64-linux-gnu\"]}"
  done
  for i in $(seq -w 1 40); do
    local lib="/usr/lib/x86_64-linux-gnu/libaccel-component-$i.so.550.54.15"
    mounts+="${mounts:+,}{\"hostPath\":\"$lib\",\"containerPath\":\"$lib\",\"options\":[\"ro\",\"nosuid\",\"nodev\",\"bind\"]}"
  done
  jq . <<<"{\"cdiVersion\":\"0.5.0\",\"kind\":\"$1\",\"devices\":[$devices],\"containerEdits\":{\"env\":[\"ACCEL_DRIVER=550.54.15\"],\"deviceNodes\":[{\"path\":\"/dev/nvidiactl\",\"hostPath\":\"/dev/full\"}],\"hooks\":[$hooks],\"mounts\":[$mounts]}}"
}

# make_dir DIR KIND...: 50 spec files (CDI_FILES to change), even ones YAML
# and odd ones JSON; the first files get the given kinds, the rest other
# vendors' kinds.
make_dir() {
  local dir=$1; shift
  mkdir -p "$dir"
  local kinds=("$@")
  for i in $(seq 0 $((${CDI_FILES:-50} - 1))); do
    local kind="vendor$i.example.com/accel"
    [ "$i" -lt "${#kinds[@]}" ] && kind=${kinds[$i]}
    if [ $((i % 2)) -eq 0 ]; then
      spec_yaml "$kind" > "$dir/$(printf '%02d' "$i")-spec.yaml"
    else
      spec_json "$kind" > "$dir/$(printf '%02d' "$i")-spec.json"
    fi
  done
}

# spec_nvidia: nvidia.com/gpu as nvidia-cdi-refresh writes it (`nvidia-ctk cdi
# generate`, device-name-strategy index and uuid): 8 GPUs, each named by its
# index and by its UUID with identical edits, a merged `all`, and spec-level
# edits with 4 control nodes, NVIDIA_VISIBLE_DEVICES=void, 3 hooks and 40
# library mounts. The GPUs' host nodes are 8 distinct nodes every Linux host
# has, so a grant check tells them apart as it would /dev/nvidiaN.
nvidia_hosts=(/dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty /dev/ptmx /dev/kmsg)
nvidia_uuid() { printf 'GPU-8b6a4d5e-%04d-4000-8000-0000000000%02d' "$1" "$1"; }
spec_nvidia() {
  printf -- '---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n'
  local i name
  for i in 0 1 2 3 4 5 6 7; do
    for name in "$i" "$(nvidia_uuid "$i")"; do
      printf -- '- name: "%s"\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%s\n      hostPath: %s\n' \
        "$name" "$i" "${nvidia_hosts[$i]}"
    done
  done
  printf -- '- name: all\n  containerEdits:\n    deviceNodes:\n'
  for i in 0 1 2 3 4 5 6 7; do printf '    - path: /dev/nvidia%s\n      hostPath: %s\n' "$i" "${nvidia_hosts[$i]}"; done
  printf 'containerEdits:\n  env:\n  - NVIDIA_VISIBLE_DEVICES=void\n  deviceNodes:\n'
  for n in nvidiactl:/dev/null nvidia-uvm:/dev/zero nvidia-uvm-tools:/dev/full nvidia-modeset:/dev/random; do
    printf '  - path: /dev/%s\n    hostPath: %s\n' "${n%%:*}" "${n#*:}"
  done
  yaml_hooks_mounts nvidia-cdi-hook nvidia-cdi-hook libnvidia-component 580.95.05
}

# spec_keys KIND N [DUPLICATE]: spec_yaml's spec with a spec-level
# `annotations` map of N keys (key-00000: value-00000, ...) before its
# devices, as a tool that records much metadata might write it. With
# DUPLICATE, the map's last key repeats its first: the file fails to parse.
spec_keys() {
  printf 'cdiVersion: 0.6.0\nkind: %s\nannotations:\n' "$1"
  awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "  key-%05d: value-%05d\n", i, i }'
  [ -z "${3:-}" ] || printf '  key-00000: again\n'
  spec_yaml "$1" | sed 1,2d
}
