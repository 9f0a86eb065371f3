#!/usr/bin/env bash
# The main job: install and build, then generate GPT-2 small as tfm IR, push it
# through pmlir-opt and print its summary; then shard a global GPT-2 (its
# vocabulary of 97 in padded shards) on dp=2 x tp=2 with the Megatron recipe
# and sequence parallelism, run it on 4 ranks and check it against the
# unsharded run; then train a byte-level GPT-2 on the GPL's text on
# dp=2 x tp=2 with sequence parallelism and ZeRO-1: its first step checked
# against the single-rank step, then 400 steps, the loss falling from about
# ln 256 (a uniform guess among the bytes) to well below it.
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

# Training: the GPL's bytes as token ids (nanoGPT's uint16 .bin), windows of
# seq + 1 = 65 bytes, 16 per step.
tokens=build/gpl-3.bin
/usr/bin/python3 - "$tokens" <<'PY'
import struct, sys
data = open("/usr/share/common-licenses/GPL-3", "rb").read()
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack(f"<{len(data)}H", *data))
PY
bytes_model=build/gpt2-bytes.mlir
build/bin/pmlir-gen gpt2 --layers 2 --hidden 128 --heads 4 --vocab 256 --seq 64 --batch 16 \
  --max-positions 64 --loss -o "$bytes_model"
train=(build/bin/pmlir-run "$bytes_model" --train --data "$tokens" --lr 3e-3
       --mesh dp=2,tp=2 --recipe megatron --sequence-parallel --zero 1)
"${train[@]}" --steps 1 --check
"${train[@]}" --steps 400 --save build/gpt2-bytes.safetensors | tee build/gpt2-bytes-train.log
/usr/bin/python3 - build/gpt2-bytes-train.log <<'PY'
import math, sys
losses = [float(line.split("loss ")[1].split(",")[0])
          for line in open(sys.argv[1]) if line.startswith("step ")]
last = sum(losses[-20:]) / 20
print(f"training: loss {losses[0]:.3f} at step 1, {last:.3f} over the last 20 of "
      f"{len(losses)} steps (ln 256 = {math.log(256):.3f})")
if last > 0.6 * math.log(256):
    sys.exit("training: the loss did not fall well below ln 256")
PY
echo "trained parameters: build/gpt2-bytes.safetensors, optimizer state beside them"
