#!/usr/bin/env bash
# Installs the Debian 12 packages pmlir needs that are missing, then configures
# and builds build/ (incrementally on later runs; --install-only stops after
# the packages). Run as root, or with sudo available.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  # toolchain
  cmake ninja-build g++ ccache lld-22 python3 git clang-format patchelf xz-utils
  # LLVM/MLIR 22: headers, static libraries, mlir-tblgen, lit and FileCheck
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools zlib1g-dev libzstd-dev
  # safetensors headers; BLAS for the CPU GEMMs; MPI for the multi-rank runtime
  nlohmann-json3-dev libopenblas-dev openmpi-bin libopenmpi-dev
  # oneDNN: the bf16 GEMMs on CPUs with AVX-512 BF16
  libdnnl-dev
  # the auto-sharder's integer programs
  coinor-libcbc-dev
  # unit tests; the PyTorch reference of the model tests
  libgtest-dev python3-torch
  # the multi-host test's hosts: network namespaces, a bridge, veth pairs
  iproute2 util-linux
)

scripts/install-packages.sh "${packages[@]}"
if [ "${1:-}" = "--install-only" ]; then
  exit 0
fi

if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build
