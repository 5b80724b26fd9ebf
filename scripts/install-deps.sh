#!/usr/bin/env bash
# Installs the Debian 12 packages verbfault needs to build and test.
# Idempotent: does nothing when every package is already installed.
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libibverbs-dev ibverbs-utils ibverbs-providers rdma-core perftest
  googletest libgtest-dev libgmock-dev librapidcheck-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libfmt-dev
  chromium chromium-driver python3-selenium
  python3-jsonschema libxml2-utils python3-pyverbs iproute2
  infiniband-diags ucx-utils libfabric-bin openmpi-bin libopenmpi-dev qperf rdmacm-utils
  librdmacm-dev libucx-dev
  clang libclang-rt-14-dev
  qemu-system-x86 busybox-static cpio kmod dash linux-headers-amd64 xz-utils
  python3-yaml curl
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
