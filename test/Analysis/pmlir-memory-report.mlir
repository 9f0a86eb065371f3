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
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=2" \
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
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron sequence-parallel=1 memory-report=-" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=SP
// SP: "activation_bytes_per_rank": 139264,
// SP: "activation_bytes_per_rank": 69632,
// SP: "norm_inputs": 8192
// SP: "f32_without_dropout": 69632,
// SP-NEXT: "fp16_with_dropout": 39936
// SP: "sequence_parallel": true

// The parameters a rank holds under the Megatron recipe on dp = 2 x tp = 2
// equal Megatron's layout, worked out by hand (f32 elements): per layer
// the column-parallel c_attn (fused QKV: each rank its heads of q, k and v)
// and c_fc with their biases, and the row-parallel c_proj weights, split
// in two: (12288 + 192 + 4096 + 16384 + 256 + 16384) / 2 = 24800; whole:
// ln_1, ln_2 and the two row-parallel biases, 384. wte split (3072), wpe
// (2048) and ln_f (128) whole: 2 x 25184 + 5248 = 55616 elements = 222464
// bytes; whole, 11776 of them. Unsharded: 108288 elements = 433152 bytes.
// RUN: pmlir-gen gpt2 --layers 2 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron memory-report=-" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=PARAMS
// PARAMS: "parameters": {
// PARAMS-NEXT: "bytes_per_rank": 222464,
// PARAMS-NEXT: "ideal_bytes_per_rank": 222464,
// PARAMS-NEXT: "replicated_bytes_per_rank": 11776,
// PARAMS-NEXT: "unsharded_bytes": 433152

// A vocabulary of 97 on tp = 2 is padded to 2 x 49 rows: a rank holds 64
// elements (256 bytes) more of wte than its share, 128 bytes over the ideal.
// RUN: pmlir-gen gpt2 --layers 2 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron memory-report=-" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=PADDED
// PADDED: "parameters": {
// PADDED-NEXT: "bytes_per_rank": 222720,
// PADDED-NEXT: "ideal_bytes_per_rank": 222592,

// Unsharded, the same accounting on global shapes (t = 1).
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-memory-report -o /dev/null | FileCheck %s --check-prefix=ONE
// ONE: "activation_bytes_per_rank": 139264,
// ONE: "f32_without_dropout": 139264,
// ONE: "bytes_per_rank": [[WHOLE:[0-9]+]],
// ONE-NEXT: "ideal_bytes_per_rank": [[WHOLE]],
// ONE-NEXT: "replicated_bytes_per_rank": [[WHOLE]],
// ONE-NEXT: "unsharded_bytes": [[WHOLE]]

// A file that cannot be written: an error, no crash.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | not pmlir-opt --pmlir-memory-report=output=%t.missing/dir/m.json -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNWRITABLE
// UNWRITABLE: error: cannot write the memory report to '{{.*}}missing/dir/m.json'
