#!/usr/bin/env bash
# Installs everything specshim needs to build, test and demo on Debian 12.
# Idempotent; runs as root (or through sudo when available).
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

PACKAGES=(
  build-essential cmake pkg-config git ca-certificates
  nlohmann-json3-dev libtomlplusplus-dev libcli11-dev libspdlog-dev libfmt-dev catch2
  libseccomp-dev libcap-dev libyaml-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libgrpc-dev libabsl-dev libc-ares-dev libre2-dev zlib1g-dev
  runc containerd busybox-static hyperfine
  clang-14 libclang-rt-14-dev bpftool lld valgrind
  iproute2 util-linux procps jq lintian file time
  python3 python3-yaml shellcheck patchelf debootstrap
  # The arm64 build (cmake/aarch64-linux-gnu.cmake): Debian's cross toolchain,
  # the :arm64 libraries the unit, golden and cli tiers link (gRPC for the
  # kubelet helper and the test fakes), and qemu-user to run them.
  crossbuild-essential-arm64 qemu-user-static
  libseccomp-dev:arm64 libcap-dev:arm64 libyaml-dev:arm64 libfmt-dev:arm64 libspdlog-dev:arm64
  libtomlplusplus-dev:arm64 libgrpc++-dev:arm64 libprotobuf-dev:arm64 libgrpc-dev:arm64 libabsl-dev:arm64
  libc-ares-dev:arm64 libre2-dev:arm64 zlib1g-dev:arm64
)

# The :arm64 packages are Debian's multiarch ones: dpkg must know the arch
# before apt can list them.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "install-deps: all ${#PACKAGES[@]} packages present"

# The arm64 tier's tests start aarch64 executables: qemu-user through binfmt_misc.
$SUDO bash "$(dirname "$0")/qemu-binfmt.sh"

# containerd 1.7 and 2.x for the e2e tiers, downloaded beside the system's 1.6.
bash "$(dirname "$0")/fetch-containerd.sh"
# runc 1.3 and crun from sid for the e2e delegate tiers, beside the system's runc 1.1.5.
bash "$(dirname "$0")/fetch-runtimes.sh"
# dockerd 28.5.2 and its client from sid for the e2e dev box tier (test/e2e/devbox),
# beside them; it runs containerd-2 from fetch-containerd.sh.
bash "$(dirname "$0")/fetch-docker.sh"
# The systemd node's Debian 12 tree for the e2e-systemd tier (test/README.md,
# "The systemd node"): debootstrap from the mirror once, cached beside them.
bash "$(dirname "$0")/../test/e2e/systemd-node/node.sh" rootfs >/dev/null
