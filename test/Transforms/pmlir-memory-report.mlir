// The activations each layer keeps, per rank. A GPT-2 layer (b = 2, s = 16,
// h = 64, a = 4) on tp = 2 matches Megatron's accounting at f32 without
// dropout exactly: sbh(16 + 48/t) + 4as^2b/t = 86016 bytes; with sequence
// parallelism the norm inputs and the projection inputs are kept as
// sequence shards: 64sbh/t + 4as^2b/t = 69632 bytes.
// Independently, by hand (f32 elements; sbh = 2048): ln_1 and ln_2 inputs
// 2 x 2048, QKV input 2048, q, k, v 3 x 1024, probabilities 2*2*16*16 =
// 1024, attention projection input 1024, fc1 input 2048, gelu input and fc2
// input 2 x 4096: 21504 elements = 86016 bytes.

// RUN: pmlir-gen gpt2 --layers 2 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | sed 's/^module {/module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {/' \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron memory-report=-" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=TP
// TP: "activation_bytes_per_rank": 172032,
// TP: "activation_bytes_per_rank": 86016,
// TP-NEXT: "by_kind": {
// TP-NEXT: "activation_inputs": 16384,
// TP-NEXT: "attention_inputs": 12288,
// TP-NEXT: "attention_probabilities": 4096,
// TP-NEXT: "matmul_inputs": 36864,
// TP-NEXT: "norm_inputs": 16384
// TP: "layer": 0,
// TP-NEXT: "megatron_gpt_layer_bytes": {
// TP-NEXT: "f32_without_dropout": 86016,
// TP-NEXT: "fp16_with_dropout": 50176
// TP: "sequence_parallel": false

// RUN: pmlir-gen gpt2 --layers 2 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | sed 's/^module {/module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {/' \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron sequence-parallel=1 memory-report=-" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=SP
// SP: "activation_bytes_per_rank": 139264,
// SP: "activation_bytes_per_rank": 69632,
// SP: "norm_inputs": 8192
// SP: "f32_without_dropout": 69632,
// SP-NEXT: "fp16_with_dropout": 39936
// SP: "sequence_parallel": true

// Unsharded, the same accounting on global shapes (t = 1).
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-memory-report -o /dev/null | FileCheck %s --check-prefix=ONE
// ONE: "activation_bytes_per_rank": 139264,
// ONE: "f32_without_dropout": 139264,

// A file that cannot be written: an error, no crash.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | not pmlir-opt --pmlir-memory-report=output=%t.missing/dir/m.json -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNWRITABLE
// UNWRITABLE: error: cannot write the memory report to '{{.*}}missing/dir/m.json'
