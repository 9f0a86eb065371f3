#!/usr/bin/env bash
# Packs what a GPU machine without MLIR or LLVM needs to run pmlir's GPU
# checks into OUTDIR (at most 60 MiB, and with the checkout's tracked files
# at most the 64 MiB a device run sends):
#
#   scripts/gpu-bundle.sh [--no-build] OUTDIR
#
# OUTDIR/gpu-check.sh     the check to run there (scripts/gpu-check.sh)
# OUTDIR/pmlir-gpu.tar.xz the tools (stripped), every shared library they
#                         load that such a machine lacks, lit with FileCheck,
#                         not and count, the models, the GPU-gated tests with
#                         their PyTorch references, bench/gpu_forward.py and
#                         bench/gpu_profile.py (with bench/benchlib.py)
#
# Builds build/ with CUDA first (the build must have found a CUDA toolkit and
# NCCL); --no-build packs what the build holds (the suite's test of the
# bundle, which runs inside that build). PMLIR_BUNDLE_BUILD names another
# build folder. Libraries the GPU machine has are left out: glibc's, the C++
# runtime's, CUDA's (the driver, the CUDA runtime, cuBLAS/cuBLASLt, NCCL) and
# OpenMPI's with everything OpenMPI itself loads (that machine's OpenMPI 4.1
# runs the ranks, so its libmpi must be the one loaded).
# PMLIR_BUNDLE_XZ sets xz's preset (default 9; 0 packs fast for tests),
# PMLIR_BUNDLE_LIMIT_MIB the size refused (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

build_first=1
if [ "${1:-}" = "--no-build" ]; then
  build_first=0
  shift
fi
if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
  echo "usage: scripts/gpu-bundle.sh [--no-build] OUTDIR" >&2
  exit 2
fi
out=$1
build=${PMLIR_BUNDLE_BUILD:-build}
llvm=/usr/lib/llvm-22
limit=$((${PMLIR_BUNDLE_LIMIT_MIB:-60} * 1024 * 1024))

# pmlir-opt stays behind: it links what pmlir-run links, and nothing there
# needs it (the benchmark counts kernels in pmlir-run --emit-compiled).
tools=(pmlir-run pmlir-gen)
if [ $build_first -eq 1 ]; then
  scripts/setup.sh --install-only
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
  fi
fi
if ! grep -q '^config.pmlir_has_nccl = True' "$build/test/lit.site.cfg.py"; then
  echo "gpu-bundle: $build was configured without CUDA and NCCL (see 'pmlir: CUDA ... NCCL ...'" \
    "in cmake's output); the GPU machine needs a CUDA build" >&2
  exit 1
fi
if [ $build_first -eq 1 ]; then
  cmake --build "$build" --target "${tools[@]}" pmlir-rt-collectives-check
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/pmlir
mkdir -p "$pkg"/{build/bin,build/unittests,build/test,lib,llvm/bin,llvm/utils}

# Tools, stripped.
for t in "${tools[@]}"; do
  strip -o "$pkg/build/bin/$t" "$build/bin/$t"
done
strip -o "$pkg/build/unittests/pmlir-rt-collectives-check" \
  "$build/unittests/pmlir-rt-collectives-check"
for t in FileCheck not count; do
  strip -o "$pkg/llvm/bin/$t" "$llvm/bin/$t"
done
cp -r "$llvm/utils/lit" "$pkg/llvm/utils/lit"
cat >"$pkg/llvm/bin/lit.py" <<'EOF'
# lit, from the bundle's copy of LLVM's lit package.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "utils", "lit"))
from lit.main import main  # noqa: E402

main()
EOF
find "$pkg/llvm/utils/lit" \( -name __pycache__ -o -name tests -o -name examples \) -prune \
  -exec rm -rf {} +

# Shared libraries: what the binaries load, less what the GPU machine has.
resolved() { ldd "$@" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u; }
mpi_lib=$(resolved "$build/bin/pmlir-run" | grep '/libmpi\.so' | head -n1)
if [ -z "$mpi_lib" ]; then
  echo "gpu-bundle: pmlir-run loads no libmpi (ldd $build/bin/pmlir-run)" >&2
  exit 1
fi
system='/(ld-linux[^/]*|lib(c|m|dl|rt|pthread|resolv|util|stdc\+\+|gcc_s)\.so[^/]*)$'
cuda='/lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-ml)\.so[^/]*$'
binaries=("$pkg"/build/bin/* "$pkg"/build/unittests/* "$pkg"/llvm/bin/{FileCheck,not,count})
comm -23 <(resolved "${binaries[@]}") <(
  {
    echo "$mpi_lib"
    resolved "$mpi_lib"
  } | sort -u
) | grep -Ev "$system|$cuda" | while read -r lib; do
  strip --strip-unneeded -o "$pkg/lib/$(basename "$lib")" "$lib"
done

# Two libraries libLLVM loads for what pmlir never does (Z3 for the static
# analyzer's constraint solver, libxml2 for merging Windows manifests) are
# 40 MiB with ICU's data: they, and LAPACK (below), travel as stubs of the same soname that define
# each symbol the bundle takes from them, with its version, and end the
# process naming the symbol should one ever be called.
stub() {
  local name=$1 real
  real=$(resolved "${binaries[@]}" | grep "/$name\$" | head -n1)
  [ -n "$real" ] || return 0
  python3 - "$real" "$stage/stub" "$pkg"/build/bin/* "$pkg"/build/unittests/* \
    "$pkg"/llvm/bin/* "$pkg"/lib/* <<'EOF'
import os, subprocess, sys
real, work, users = sys.argv[1], sys.argv[2], sys.argv[3:]
name = os.path.basename(real)
os.makedirs(work, exist_ok=True)
def nm(*args):
    return subprocess.run(["nm", "-D", *args], capture_output=True, text=True).stdout.splitlines()
wanted = set()
for user in users:
    if os.path.basename(user) != name:
        wanted |= {line.split()[-1].split("@")[0] for line in nm("--undefined-only", user)}
code = ['#include <stdio.h>', '#include <stdlib.h>',
        f'static void called(const char *s) {{ fprintf(stderr, "pmlir: %s of {name} was called;'
        f' the GPU bundle carries {name} as a stub (scripts/gpu-bundle.sh)\\n", s); abort(); }}']
versions = {}
for line in nm("--defined-only", "--with-symbol-versions", "-S", real):
    fields = line.split()
    symbol, _, version = fields[-1].partition("@@")
    if symbol not in wanted or fields[-2] in ("A",):
        continue
    if fields[-2] in ("T", "t", "W", "i"):
        code.append(f'void {symbol}(void) {{ called("{symbol}"); }}')
    else:
        size = int(fields[1], 16) if len(fields) == 4 else 8
        code.append(f'__attribute__((aligned(16))) char {symbol}[{size}];')
    versions.setdefault(version, []).append(symbol)
with open(f"{work}/{name}.c", "w") as f:
    f.write("\n".join(code) + "\n")
with open(f"{work}/{name}.map", "w") as f:
    for version, symbols in versions.items():
        f.write(f"{version} {{ global: {'; '.join(symbols)}; local: *; }};\n")
EOF
  gcc -shared -fPIC -O1 -o "$pkg/lib/$name" "$stage/stub/$name.c" -Wl,-soname,"$name" \
    -Wl,--version-script,"$stage/stub/$name.map"
}
stub libz3.so.4
stub libxml2.so.2
# LAPACK is loaded by the CBC solver's libraries, which only auto-sharding
# calls; no GPU-gated test or benchmark plans automatically.
stub liblapack.so.3
# What only the replaced libraries loaded (ICU) stays behind.
while :; do
  unused=""
  needed=$(readelf -d "${binaries[@]}" "$pkg"/lib/* 2>/dev/null | grep NEEDED)
  for lib in "$pkg"/lib/*; do
    soname=$(basename "$lib")
    if ! grep -qF "[$soname]" <<<"$needed"; then
      unused=$lib
      break
    fi
  done
  [ -n "$unused" ] || break
  rm "$unused"
done
# The binaries find the bundle's libraries by their RPATH (which, unlike a
# RUNPATH, holds for the libraries they load too), not by LD_LIBRARY_PATH,
# which would hand the stubs to every other program; CUDA's libraries by
# links gpu-check.sh makes in cuda-lib/ to those of the machine it runs on.
for b in "${binaries[@]}"; do
  patchelf --force-rpath --set-rpath '$ORIGIN/../../lib:$ORIGIN/../../cuda-lib' "$b"
done
# With cuBLASLt, which they do not link: the runtime loads it when a GPU
# run starts (lib/Runtime/CudaRuntime.cpp).
cublaslt=$(sed -n 's/^CUDA_cublasLt_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
cublaslt_soname=$(readelf -d "$cublaslt" 2>/dev/null | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
if [ -z "$cublaslt_soname" ]; then
  echo "gpu-bundle: no soname for cuBLASLt ('$cublaslt', CUDA_cublasLt_LIBRARY of $build)" >&2
  exit 1
fi
{
  readelf -d "$pkg/build/bin/pmlir-run" "$pkg/build/unittests/pmlir-rt-collectives-check" |
    sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | grep -E "^${cuda#/}"
  echo "$cublaslt_soname"
} | sort -u >"$pkg/CUDA_LIBS"
cuda_dirs=$(resolved "$build/bin/pmlir-run" | grep -E "$cuda" | xargs -n1 dirname | sort -u |
  paste -sd:)
missing=$(LD_LIBRARY_PATH=$cuda_dirs ldd -r "${binaries[@]}" 2>&1 |
  grep -E 'not found|undefined symbol' || true)
if [ -n "$missing" ]; then
  echo "gpu-bundle: libraries not found here:" >&2
  echo "$missing" >&2
  exit 1
fi

# The tests that run on a GPU, with their references and the models; the
# benchmark.
mkdir -p "$pkg/src/test/Integration/CPU" "$pkg/src/bench"
cp test/lit.cfg.py "$pkg/src/test/"
# The GPU-gated tests: those that require a GPU or run commands only with
# one (lit's feature gpu); the rest of the suite runs on the build machines.
gated=$(grep -rlE '^# (REQUIRES:.*\bgpu\b)|^(# )?RUN: %if gpu ' test --include='*.test' --include='*.mlir')
if [ -z "$gated" ]; then
  echo "gpu-bundle: no GPU-gated tests found under test/" >&2
  exit 1
fi
for t in $gated; do
  mkdir -p "$pkg/src/$(dirname "$t")"
  cp "$t" "$pkg/src/$t"
done
cp -r test/Integration/CPU/{reference.py,ops.py,grad_ops.py,Inputs} "$pkg/src/test/Integration/CPU/"
cp -r test/Integration/GPU/Inputs "$pkg/src/test/Integration/GPU/"
cp -r models "$pkg/src/"
cp bench/benchlib.py bench/gpu_forward.py bench/gpu_profile.py "$pkg/src/bench/"
# lit's site configuration, its paths relative to the bundle.
cat >"$pkg/build/test/lit.site.cfg.py" <<'EOF'
# The bundle's lit site configuration (scripts/gpu-bundle.sh): paths inside
# the unpacked bundle.
import os

bundle = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
config.pmlir_tools_dir = os.path.join(bundle, "build", "bin")
config.pmlir_source_dir = os.path.join(bundle, "src")
config.pmlir_binary_dir = os.path.join(bundle, "build")
config.llvm_tools_dir = os.path.join(bundle, "llvm", "bin")
config.pmlir_has_cuda = True
config.pmlir_has_nccl = True

import lit.llvm
lit.llvm.initialize(lit_config, config)

lit_config.load_config(config, os.path.join(bundle, "src", "test", "lit.cfg.py"))
EOF
git -C "$root" log -1 --format='%H %cd' >"$pkg/VERSION"
git -C "$root" status --porcelain | sed 's/^/uncommitted: /' >>"$pkg/VERSION"

mkdir -p "$out"
trap 'rm -rf "$stage" "$out/pmlir-gpu.tar.xz.part"' EXIT
# x86 code compresses better through xz's branch-address filter.
tar -C "$stage" -cf - pmlir |
  xz -T0 --x86 --lzma2=preset="${PMLIR_BUNDLE_XZ:-9}" >"$out/pmlir-gpu.tar.xz.part"
mv "$out/pmlir-gpu.tar.xz.part" "$out/pmlir-gpu.tar.xz"
cp scripts/gpu-check.sh "$out/gpu-check.sh"
size=$(du -cb "$out/pmlir-gpu.tar.xz" "$out/gpu-check.sh" | tail -n1 | cut -f1)
echo "gpu-bundle: $out: $((size / 1024 / 1024)) MiB ($(du -sh "$pkg" | cut -f1) unpacked)"
if [ "$size" -gt "$limit" ]; then
  echo "gpu-bundle: $out is $size bytes, over the ${PMLIR_BUNDLE_LIMIT_MIB:-60} MiB a GPU machine" \
    "can be sent; nothing written" >&2
  rm "$out/pmlir-gpu.tar.xz" "$out/gpu-check.sh"
  exit 1
fi
# A device run sends the checkout's files with the bundle (unless a larger
# limit was asked, as the suite's test does for a bundle packed fast).
tree=$(git ls-files -z | du -cb --files0-from=- 2>/dev/null | tail -n1 | cut -f1)
if [ "$limit" -le $((60 * 1024 * 1024)) ] && [ $((size + tree)) -gt $((64 * 1024 * 1024)) ]; then
  echo "gpu-bundle: $out ($size bytes) and the checkout's tracked files ($tree bytes) are over" \
    "the 64 MiB a device run sends; nothing written" >&2
  rm "$out/pmlir-gpu.tar.xz" "$out/gpu-check.sh"
  exit 1
fi
