#!/usr/bin/env bash
# pmlir's GPU check, run on a GPU machine from the folder scripts/gpu-bundle.sh
# wrote (it is copied there beside pmlir-gpu.tar.xz):
#
#   ./gpu-check.sh [--no-gpu-ok] [--keep-going] [--steps smoke,tests,bench,profile]
#                  [--bench-args "ARGS"] OUTDIR
#
# Unpacks the bundle, prints the GPU, driver and library versions it finds and
# the libraries the tools load, then runs, each step under its own time limit
# and with its log in OUTDIR:
#   smoke  (60 s)  one cuBLASLt GEMM and two generated kernels (GELU, a row
#                  softmax) against PyTorch f64, a tiny GPT-2 forward on the GPU against the CPU run,
#                  and NCCL collectives (all-reduce among them) over two ranks
#                  on one GPU; the first failure stops the script with its
#                  full message (with --keep-going the other checks still run)
#   tests  (180 s) every GPU-gated lit test (test/Integration/GPU, the NCCL
#                  backend's test), lit's summary last
#   bench  (270 s) bench/gpu_forward.py (its tables in OUTDIR/bench.md)
#   profile (90 s) bench/gpu_profile.py: a traced bf16 GPT-2 small training
#                  step, its GPU time by kernel (OUTDIR/profile.md, the
#                  trace in OUTDIR/train-trace.json)
# (on an H200 on 2026-11-28: 21 s, 132 s, 234 s and 46 s: about 7.2
# minutes). --bench-args replaces the benchmark's arguments (default
# "--rounds 1 --repeat 10 --steps 4").
# The exit status is 0 when every step that ran passed. With --no-gpu-ok, a
# machine without a usable GPU prints pmlir-run's "no GPU" error and exits 0:
# that proves the bundle complete on a machine without one.
# Limits can be changed with PMLIR_CHECK_{SMOKE,TESTS,BENCH,PROFILE}_SECONDS.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

# One round of the benchmark fits the step's limit; more rounds give ranges.
no_gpu_ok=0 keep_going=0 steps=smoke,tests,bench,profile out=""
bench_args="--rounds 1 --repeat 10 --steps 4"
while [ $# -gt 0 ]; do
  case $1 in
  --no-gpu-ok) no_gpu_ok=1 ;;
  --keep-going) keep_going=1 ;;
  --steps) steps=${2:?--steps needs a list}; shift ;;
  --bench-args) bench_args=${2?--bench-args needs a value}; shift ;;
  -*) echo "gpu-check: unknown option '$1'" >&2; exit 2 ;;
  *) [ -z "$out" ] || { echo "gpu-check: one OUTDIR, got '$out' and '$1'" >&2; exit 2; }
     out=$1 ;;
  esac
  shift
done
if [ -z "$out" ]; then
  echo "usage: ./gpu-check.sh [--no-gpu-ok] [--keep-going] [--steps smoke,tests,bench,profile]" \
    "[--bench-args ARGS] OUTDIR" >&2
  exit 2
fi
for s in ${steps//,/ }; do
  case $s in smoke | tests | bench | profile) ;; *) echo "gpu-check: unknown step '$s'" >&2; exit 2 ;; esac
done
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
wants() { [[ ",$steps," == *",$1,"* ]]; }
say() { echo "gpu-check: $*"; }

# --- Unpack -----------------------------------------------------------------
pkg=$here/pmlir
if [ ! -x "$pkg/build/bin/pmlir-run" ] || [ "$here/pmlir-gpu.tar.xz" -nt "$pkg/VERSION" ]; then
  rm -rf "$pkg"
  # -m: the files are newer than the archive, which is unpacked once.
  xz -dc "$here/pmlir-gpu.tar.xz" | tar -C "$here" -xmf - || {
    echo "gpu-check: cannot unpack $here/pmlir-gpu.tar.xz" >&2
    exit 1
  }
fi
bin=$pkg/build/bin

# --- Environment ------------------------------------------------------------
# The Python with PyTorch: PMLIR_TEST_PYTHON, else python3 on the PATH.
python=${PMLIR_TEST_PYTHON:-$(command -v python3)}
export PMLIR_TEST_PYTHON=$python PYTHONUNBUFFERED=1
# ptxas from the CUDA toolkit (the GPU target runs it when pmlir-run
# compiles).
if [ -z "${CUDA_HOME:-}" ]; then
  if command -v ptxas >/dev/null; then
    CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v ptxas)")")")
  else
    CUDA_HOME=/usr/local/cuda
  fi
fi
export CUDA_HOME
# The bundle's binaries load its libraries by their RPATH and CUDA's (the
# CUDA runtime, cuBLASLt, NCCL: pkg/CUDA_LIBS) from cuda-lib/, linked here to
# this machine's: the toolkit's, else those in Python's NVIDIA wheels
# (PyTorch's NCCL), else the system's. Nothing is put on LD_LIBRARY_PATH, so
# Python, mpirun and orted load what they always load.
cuda_dirs=("$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib")
while IFS= read -r d; do
  [ -n "$d" ] && cuda_dirs+=("$d")
done < <("$python" - 2>/dev/null <<'EOF'
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
for d in sorted({os.path.dirname(p) for r in roots
                 for p in glob.glob(os.path.join(r, "nvidia", "*", "lib", "lib*.so*"))}):
    print(d)
EOF
)
cuda_dirs+=(/usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64)
rm -rf "$pkg/cuda-lib"
mkdir -p "$pkg/cuda-lib"
while IFS= read -r soname; do
  for d in "${cuda_dirs[@]}"; do
    if [ -e "$d/$soname" ]; then
      ln -s "$(readlink -f "$d/$soname")" "$pkg/cuda-lib/$soname"
      break
    fi
  done
done <"$pkg/CUDA_LIBS"
export PATH=$bin:$pkg/llvm/bin:$PATH

{
  say "bundle $(head -n1 "$pkg/VERSION")"
  sed -n 's/^uncommitted: /gpu-check: uncommitted: /p' "$pkg/VERSION"
  say "host $(uname -srm), $(nproc) cores"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader |
      sed 's/^/gpu-check: GPU /'
  else
    say "no nvidia-smi"
  fi
  say "CUDA_HOME $CUDA_HOME; $("$CUDA_HOME/bin/ptxas" --version 2>&1 | tail -n1)"
  say "python $python: $("$python" -c 'import torch; print("torch", torch.__version__, "cuda",
torch.version.cuda, "GPU", torch.cuda.is_available())' 2>&1 | tail -n1)"
  say "CUDA libraries: $(cd "$pkg/cuda-lib" && for l in *; do echo -n "$l -> $(readlink "$l") "; done)"
  say "mpirun: $(mpirun --version 2>&1 | head -n1); $(env | grep -E '^(OMPI_MCA|PMIX_MCA|OPAL)_' |
    tr '\n' ' ')"
  say "libraries the tools load:"
  ldd "$bin/pmlir-run" "$pkg/build/unittests/pmlir-rt-collectives-check" | grep '=>' |
    sort -u -k1,1
} 2>&1 | tee "$out/environment.log"
elves=("$bin"/* "$pkg/build/unittests/"* "$pkg/llvm/bin/"{FileCheck,not,count})
# A library not found, or found and not loadable (cut short, another
# machine's): ldd says the first beside its name, the second as an error.
missing=$(ldd "${elves[@]}" 2>&1 | grep -E 'not found|error while loading shared libraries' | sort -u)
# cuBLASLt is loaded only when a GPU run starts, so ldd does not see it:
# a CUDA library linked nowhere in cuda-lib/ must be in ld.so's cache.
while IFS= read -r soname; do
  if [ ! -e "$pkg/cuda-lib/$soname" ] && ! ldconfig -p 2>/dev/null | awk '{ print $1 }' | grep -qxF "$soname"; then
    missing+="${missing:+$'\n'}	$soname => not found (in ${cuda_dirs[*]} or ld.so's cache)"
  fi
done <"$pkg/CUDA_LIBS"
if [ -n "$missing" ]; then
  say "FAILED: libraries not found or not loadable:"
  echo "$missing"
  exit 1
fi

failed=()
# Runs a step's command under its time limit, its output in OUTDIR/NAME.log.
step() {
  local name=$1 seconds=$2
  shift 2
  local start=$SECONDS rc
  say "$name: $* (limit ${seconds}s)"
  timeout -k 10 "$seconds" "$@" >"$out/$name.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    say "$name: ok ($((SECONDS - start)) s)"
  elif [ $no_gpu_ok -eq 1 ] && grep -q -- '--device gpu: no GPU' "$out/$name.log"; then
    grep -- '--device gpu: no GPU' "$out/$name.log" | head -n1
    say "no GPU here (--no-gpu-ok): the bundle's tools ran up to the device"
    exit 0
  else
    [ $rc -eq 124 ] && echo "gpu-check: $name: timed out after ${seconds}s" >>"$out/$name.log"
    say "$name: FAILED (exit $rc, $((SECONDS - start)) s); $out/$name.log:"
    cat "$out/$name.log"
    failed+=("$name")
  fi
  return $rc
}

# --- (a) Smoke --------------------------------------------------------------
smoke_limit=${PMLIR_CHECK_SMOKE_SECONDS:-60}
smoke() {
  local ref=$pkg/src/test/Integration/CPU work=$out/smoke
  mkdir -p "$work"
  local deadline=$((SECONDS + smoke_limit))
  left() { echo $((deadline - SECONDS > 5 ? deadline - SECONDS : 5)); }
  # A GEMM first: the first GPU run says whether there is a GPU at all
  # (step: with --no-gpu-ok, none ends the check there).
  step smoke-gemm "$(left)" "$python" "$ref/ops.py" "$bin/pmlir-run" "$work" \
    --only matmul --run-args "--device gpu" || [ $keep_going -eq 1 ] || return 1
  step smoke-kernel "$(left)" "$python" "$ref/ops.py" "$bin/pmlir-run" "$work" \
    --only "gelu tanh" --only softmax --run-args "--device gpu" || [ $keep_going -eq 1 ] || return 1
  step smoke-gpt2 "$(left)" "$python" - "$ref" "$bin/pmlir-run" "$pkg/src/models/tiny-gpt2.mlir" \
    "$work" <<'EOF' || [ $keep_going -eq 1 ] || return 1
# A tiny GPT-2 forward on the GPU against the same forward on the CPU.
import subprocess, sys, torch
ref, prun, model, work = sys.argv[1:5]
sys.path.insert(0, ref)
from reference import read_safetensors, write_safetensors
ids = torch.randint(0, 97, (2, 16), generator=torch.Generator().manual_seed(3))
write_safetensors(f"{work}/ids.safetensors", {"input_ids": ids})
logits = {}
for device in ("cpu", "gpu"):
    subprocess.run([prun, model, "--device", device, "--inputs", f"{work}/ids.safetensors",
                    "--output", f"{work}/{device}.safetensors"], check=True)
    logits[device] = read_safetensors(f"{work}/{device}.safetensors")["logits"].double()
err = ((logits["gpu"] - logits["cpu"]).norm() / logits["cpu"].norm()).item()
print(f"tiny GPT-2 logits {list(logits['cpu'].shape)}: GPU against CPU relative error "
      f"{err:.2e} (tolerance 1e-05)")
sys.exit(0 if err <= 1e-5 else 1)
EOF
  step smoke-nccl "$(left)" mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    -x PMLIR_RT_NCCL_SHARED_GPU=1 -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1 \
    sh -c 'NCCL_HOSTID=pmlir-$OMPI_COMM_WORLD_RANK exec "$0" --mesh tp=2 --backend nccl --timeout 30' \
    "$pkg/build/unittests/pmlir-rt-collectives-check" || [ $keep_going -eq 1 ] || return 1
}
if wants smoke; then
  if ! smoke && [ $keep_going -eq 0 ]; then
    say "FAILED: smoke (stopping at the first failure)"
    exit 1
  fi
fi

# --- (b) Every GPU-gated test -----------------------------------------------
if wants tests; then
  step tests "${PMLIR_CHECK_TESTS_SECONDS:-180}" "$python" "$pkg/llvm/bin/lit.py" -v \
    -j "$(nproc)" "$pkg/build/test"
  grep -E '^(  Passed|  Failed|  Unsupported|  Timed Out)' "$out/tests.log" | sed 's/^/gpu-check: tests: /'
fi

# --- (c) The benchmark ------------------------------------------------------
if wants bench; then
  # shellcheck disable=SC2086 # --bench-args is a list of arguments
  step bench "${PMLIR_CHECK_BENCH_SECONDS:-270}" "$python" "$pkg/src/bench/gpu_forward.py" \
    --build "$pkg/build" $bench_args
  grep '^|' "$out/bench.log" >"$out/bench.md"
  cat "$out/bench.log"
fi

# --- (d) The training step's profile ----------------------------------------
if wants profile; then
  step profile "${PMLIR_CHECK_PROFILE_SECONDS:-90}" "$python" "$pkg/src/bench/gpu_profile.py" \
    --build "$pkg/build" --keep-trace "$out/train-trace.json"
  cp "$out/profile.log" "$out/profile.md"
  cat "$out/profile.log"
fi

if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "every step passed ($steps)"
