#!/usr/bin/env bash
# The sanitizer step of CI: builds build-sanitize/ with clang, AddressSanitizer
# and UndefinedBehaviorSanitizer, then runs the unit tests, the multi-rank
# fault tests and a fixed-seed smoke run of each libFuzzer target
# (FUZZ_SECONDS each, 60 by default). Installs what scripts/setup.sh installs
# and clang-22 with its sanitizer runtimes (libclang-rt-22-dev) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --install-only
scripts/install-packages.sh clang-22 libclang-rt-22-dev

if [ ! -f build-sanitize/build.ninja ]; then
  CC=clang-22 CXX=clang++-22 cmake -S . -B build-sanitize -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DPMLIR_ENABLE_SANITIZERS=ON -DPMLIR_ENABLE_FUZZERS=ON -DPMLIR_ENABLE_CUDA=OFF
fi
cmake --build build-sanitize --target PMLIRUnitTests pmlir-rt-collectives-check pmlir-run pmlir-plan \
  pmlir-opt pmlir-gen pmlir-fuzz-safetensors pmlir-fuzz-opt pmlir-fuzz-checkpoint-index

# Any report ends the process with an error. OpenMPI's own allocations at
# exit are not this project's leaks; Debian's LLVM/MLIR libraries are not
# instrumented, so the poisoning and container annotations that LLVM's
# headers compile into our code would be checked against memory those
# libraries manage without them (false reports): both are off. LLVM installs
# its own alternate signal stack on each thread, which ASan must not free.
# An allocation too large for the machine returns null, as without ASan, so
# the message that names the tensor is what is tested.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:allow_user_poisoning=0:detect_container_overflow=0:use_sigaltstack=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

echo "== unit tests (ASan + UBSan)"
build-sanitize/unittests/PMLIRUnitTests --gtest_brief=1
# On a CPU with AVX-512 BF16 and no AMX the tests of the bf16 matmul
# primitive skip above; they run here on the paths AMX takes.
if grep -q ' avx512_bf16' /proc/cpuinfo && ! grep -q ' amx_tile' /proc/cpuinfo; then
  echo "== the matmul primitive's unit tests without AMX (ASan + UBSan)"
  PMLIR_TEST_BF16_MATMUL_WITHOUT_AMX=1 build-sanitize/unittests/PMLIRUnitTests --gtest_brief=1 \
    --gtest_filter='GemmKernels.OneDnnBf16*'
fi

echo "== fault tests (ASan + UBSan)"
/usr/lib/llvm-22/bin/lit -sv build-sanitize/test/Integration/MultiRank/faults.test \
  build-sanitize/test/Integration/CPU/pmlir-run-errors.test build-sanitize/test/Tools/outputs.test

echo "== fuzz smoke runs (fixed seed)"
seconds="${FUZZ_SECONDS:-60}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/st-seeds" "$scratch/st-new" "$scratch/opt-seeds" "$scratch/opt-new" \
  "$scratch/ck-seeds" "$scratch/ck-new"
python3 fuzz/make-checkpoint-seeds.py "$scratch/ck-seeds"
python3 test/Integration/CPU/Inputs/make-bad-files.py "$scratch/st-seeds"
python3 fuzz/make-safetensors-seeds.py "$scratch/st-seeds"
cp models/tiny-gpt2.mlir models/tiny-llama.mlir test/Dialect/Tfm/*.mlir \
  test/Sharding/pmlir-partition.mlir test/Sharding/pmlir-sharding-propagation.mlir \
  test/Sharding/pmlir-verify-spmd.mlir \
  test/Integration/MultiRank/Inputs/*.mlir "$scratch/opt-seeds/"
# The pipe dialect's tests share their names with the tfm dialect's.
for seed in test/Dialect/Pipe/*.mlir; do
  cp "$seed" "$scratch/opt-seeds/pipe-$(basename "$seed")"
done
# Models with a loss, which the fuzzer also compiles as training steps.
build-sanitize/bin/pmlir-gen gpt2 --layers 2 --hidden 32 --heads 2 --vocab 64 --seq 8 --batch 2 \
  --max-positions 8 --loss -o "$scratch/opt-seeds/gpt2-loss.mlir"
build-sanitize/bin/pmlir-gen llama --layers 2 --hidden 32 --heads 4 --kv-heads 2 --ffn 48 \
  --vocab 64 --seq 8 --batch 2 --loss -o "$scratch/opt-seeds/llama-loss.mlir"
build-sanitize/bin/pmlir-fuzz-safetensors "$scratch/st-new" "$scratch/st-seeds" \
  -seed=1 -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix=build-sanitize/fuzz-safetensors- -print_final_stats=1
build-sanitize/bin/pmlir-fuzz-opt "$scratch/opt-new" "$scratch/opt-seeds" \
  -seed=1 -max_total_time="$seconds" -max_len=16384 -timeout=30 -rss_limit_mb=4096 \
  -artifact_prefix=build-sanitize/fuzz-opt- -print_final_stats=1
build-sanitize/bin/pmlir-fuzz-checkpoint-index "$scratch/ck-new" "$scratch/ck-seeds" \
  -seed=1 -max_total_time="$((seconds / 2))" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix=build-sanitize/fuzz-checkpoint-index- -print_final_stats=1
echo "sanitizer step: unit tests, fault tests and fuzz smoke runs passed"
