#!/usr/bin/env bash
# The main job: install and build, then generate GPT-2 small as tfm IR, push it
# through pmlir-opt and print its summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

model=build/gpt2-small.mlir
build/bin/pmlir-gen gpt2 --layers 12 --hidden 768 --heads 12 --vocab 50257 \
  --seq 128 --batch 1 --max-positions 1024 -o "$model"
build/bin/pmlir-opt "$model" --pmlir-print-model-summary -o build/gpt2-small.opt.mlir
echo "IR: $model -> build/gpt2-small.opt.mlir"
