#!/bin/bash
# cpu_tables.sh - every measurement behind the CPU tables of
# docs/performance.md (issue 41's points), one after another, each
# command's output in a file of its own, so that one unattended run on a
# machine (an Intel Xeon with AMX, an AMD EPYC) fills them all.
#
#   bench/cpu_tables.sh VENV OUTDIR [BUILD]
#
# VENV: a virtual environment with PyTorch 2.x (and JAX for the forward's
# jax.jit column), e.g. `/usr/bin/python3 -m venv VENV && VENV/bin/pip
# install torch numpy safetensors jax`; BUILD: pmlir's build folder
# (default: build). OUTDIR must not exist: nothing of an earlier run is
# overwritten. Time nothing else on the machine meanwhile (no build, no
# test suite): about 90 minutes on two cores. OUTDIR/machine.txt says what
# ran where (the CPU, OpenBLAS's core, the GEMM path pmlir-run chose).
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 VENV OUTDIR [BUILD]" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=$1
OUT=$2
BUILD=${3:-$ROOT/build}
PY=$VENV/bin/python
if [ ! -x "$PY" ]; then
  echo "$0: $PY: no python in the virtual environment $VENV" >&2
  exit 2
fi
if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "$0: $PY cannot import torch: install PyTorch 2.x in $VENV" >&2
  exit 2
fi
if [ ! -x "$BUILD/bin/pmlir-run" ]; then
  echo "$0: $BUILD/bin/pmlir-run: no pmlir-run there (build first, or give BUILD)" >&2
  exit 2
fi
if [ -e "$OUT" ]; then
  echo "$0: $OUT exists: give a new folder" >&2
  exit 2
fi
mkdir -p "$OUT"

# What ran where; a line that cannot say is left out, not fatal.
{
  set +e
  date -u
  git -C "$ROOT" log -1 --format='pmlir %h %s'
  lscpu | grep -E '^(Model name|CPU family|Model|CPU\(s\)|Flags)'
  /usr/bin/python3 -c 'import ctypes; b = ctypes.CDLL("libopenblas.so.0"); b.openblas_get_corename.restype = ctypes.c_char_p; print("OpenBLAS core:", b.openblas_get_corename().decode())'
  "$PY" -c 'import torch; print("PyTorch", torch.__version__, torch.__config__.show())'
  # The GEMM path pmlir-run chooses here: one step of a tiny model.
  "$BUILD/bin/pmlir-gen" gpt2 --layers 1 --hidden 64 --heads 4 --vocab 256 --seq 16 --batch 2 \
    --max-positions 32 --loss -o "$OUT/tiny.mlir"
  /usr/bin/python3 -c 'import struct, sys; open(sys.argv[1], "wb").write(struct.pack("<4096H", *[i * 7 % 256 for i in range(4096)]))' "$OUT/tokens.bin"
  for precision in f32 bf16; do
    "$BUILD/bin/pmlir-run" "$OUT/tiny.mlir" --train --steps 1 --data "$OUT/tokens.bin" --threads 2 \
      --precision $precision --verbose 2>&1 | grep '^gemm:'
  done
} >"$OUT/machine.txt" 2>&1
set -e
rm -f "$OUT/tiny.mlir" "$OUT/tokens.bin"

# One step: its command first, then its output, in OUT/NAME.txt; a step that
# fails is named, the run goes on to the next and exits 1 at its end.
failed=0
step() {
  local name=$1
  shift
  echo "== $name: $*"
  if ! { echo "\$ $*"; "$@"; } >"$OUT/$name.txt" 2>&1; then
    echo "   failed: see $OUT/$name.txt"
    failed=1
  fi
}

cd "$ROOT"
step gemm-only /usr/bin/python3 bench/cpu_forward.py --build "$BUILD" --gemm-only
step forward-f32 /usr/bin/python3 bench/cpu_forward.py --build "$BUILD" --rounds 3 --repeat 3 \
  --shapes 1x128,8x128,1x512,8x512 --threads 1,2 --python "$PY"
step forward-f32-jax /usr/bin/python3 bench/cpu_forward.py --build "$BUILD" --rounds 2 --repeat 3 \
  --shapes 1x128,8x128 --threads 1,2 --python "$PY" --jax
step forward-bf16 /usr/bin/python3 bench/cpu_forward.py --build "$BUILD" --rounds 3 --repeat 3 \
  --shapes 1x128,8x128 --threads 1,2 --python "$PY" --precision bf16
step forward-bf16-weights-cast /usr/bin/python3 bench/cpu_forward.py --build "$BUILD" --rounds 3 \
  --repeat 3 --shapes 1x128,8x128 --threads 1,2 --python "$PY" --precision bf16 \
  --torch-bf16-weights
step train-f32 /usr/bin/python3 bench/cpu_train.py --build "$BUILD" --rounds 3 --steps 5 \
  --python "$PY"
step train-bf16 /usr/bin/python3 bench/cpu_train.py --build "$BUILD" --rounds 3 --steps 5 \
  --python "$PY" --precision bf16
step threads /usr/bin/python3 bench/cpu_threads.py --build "$BUILD"
step train-torch-compile /usr/bin/python3 bench/cpu_train.py --build "$BUILD" --rounds 2 --steps 5 \
  --python "$PY" --torch-compile
step train-bf16-torch-compile /usr/bin/python3 bench/cpu_train.py --build "$BUILD" --rounds 2 \
  --steps 5 --python "$PY" --precision bf16 --torch-compile
# The step's GEMM calls by shape, to set beside the libraries' own rates below.
step profile-f32 /usr/bin/python3 bench/cpu_profile.py --build "$BUILD" --threads 1
step profile-bf16 /usr/bin/python3 bench/cpu_profile.py --build "$BUILD" --threads 1 \
  --precision bf16
# The GEMM libraries alone: the step's shapes with their operands in the
# caches and flushed from them (onednn_gemm's one-thread table), oneDNN's
# API against its matmul primitive.
for bench in onednn_gemm onednn_f32_matmul onednn_bf16_matmul; do
  if g++ -O2 -std=c++17 -fopenmp "bench/$bench.cpp" -o "$OUT/$bench" -lopenblas -ldnnl -lpthread \
    >"$OUT/$bench-build.txt" 2>&1; then
    step "$bench" "$OUT/$bench"
    rm -f "$OUT/$bench" "$OUT/$bench-build.txt"
  else
    echo "   $bench did not build: see $OUT/$bench-build.txt"
    failed=1
  fi
done
echo "done: $OUT"
exit $failed
