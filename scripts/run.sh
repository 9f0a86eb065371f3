#!/usr/bin/env bash
# The main job: install and build, then generate GPT-2 small as tfm IR, push it
# through pmlir-opt and print its summary; then shard a global GPT-2 (its
# vocabulary of 97 in padded shards) on dp=2 x tp=2 with the Megatron recipe
# and sequence parallelism, run it on 4 ranks and check it against the
# unsharded run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

model=build/gpt2-small.mlir
build/bin/pmlir-gen gpt2 --layers 12 --hidden 768 --heads 12 --vocab 50257 \
  --seq 128 --batch 1 --max-positions 1024 -o "$model"
build/bin/pmlir-opt "$model" --pmlir-print-model-summary -o build/gpt2-small.opt.mlir
echo "IR: $model -> build/gpt2-small.opt.mlir"

sharded=build/gpt2-tiny.mlir
build/bin/pmlir-gen gpt2 --layers 2 --hidden 64 --heads 4 --vocab 97 --seq 16 \
  --batch 2 --max-positions 32 -o "$sharded"
/usr/bin/python3 - <<'PY'
import json, random, struct
random.seed(0)
ids = [random.randrange(97) for _ in range(2 * 16)]
header = json.dumps({"input_ids": {"dtype": "I64", "shape": [2, 16],
                                   "data_offsets": [0, 8 * len(ids)]}}).encode()
with open("build/gpt2-tiny-ids.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + struct.pack(f"<{len(ids)}q", *ids))
PY
build/bin/pmlir-run "$sharded" --mesh dp=2,tp=2 --recipe megatron --sequence-parallel \
  --inputs build/gpt2-tiny-ids.safetensors --output build/gpt2-tiny-logits.safetensors \
  --check --print --comm-report build/gpt2-tiny-comm.json \
  --memory-report build/gpt2-tiny-memory.json
echo "sharded logits: build/gpt2-tiny-logits.safetensors, collectives:" \
  "build/gpt2-tiny-comm.json, activation memory: build/gpt2-tiny-memory.json"
