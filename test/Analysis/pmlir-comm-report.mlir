// The Megatron plan's communication, pinned: GPT-2 and Llama (2 layers,
// B=2, S=16, H=64) under the megatron recipe on dp=2 x tp=2 all-reduce
// exactly 2 sums per layer plus the embedding's, each of b*s*h = 1*16*64
// f32 (4096 bytes) over tp: 5 all-reduces, 20480 bytes per rank, and
// nothing else (each rank holds its heads of GPT-2's fused QKV weight, so
// its split needs no slicing).

// RUN: pmlir-gen gpt2 --layers 2 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-partition \
// RUN:       --pmlir-comm-report=output=%t.gpt2.json -o %t.gpt2.mlir
// RUN: FileCheck %s --check-prefix=GPT2 < %t.gpt2.json
// RUN: FileCheck %s --check-prefix=GPT2-IR < %t.gpt2.mlir
// GPT2: "mesh": {
// GPT2-NEXT: "dp": 2,
// GPT2-NEXT: "tp": 2
// GPT2: "per_axis": {
// GPT2-NEXT: "tp": {
// GPT2-NEXT: "bytes_per_rank": 20480,
// GPT2: "total": {
// GPT2-NEXT: "bytes_per_rank": 20480,
// GPT2-NEXT: "count": 5,
// GPT2-NEXT: "seconds": {{.*}},
// GPT2-NEXT: "wire_bytes_per_rank": 20480
// GPT2: "totals": {
// GPT2-NEXT: "all_reduce": {
// GPT2-NEXT: "bytes_per_rank": 20480,
// GPT2-NEXT: "count": 5,
// GPT2-NEXT: "seconds": {{.*}},
// GPT2-NEXT: "wire_bytes_per_rank": 20480
// GPT2-NEXT: }
// GPT2-NEXT: }
// In the IR: the embedding's all-reduce, then per layer the attention
// output's and the MLP output's, each before its bias.
// GPT2-IR: tfm.embedding {{.*}} rows_from
// GPT2-IR-NEXT: tfm.arange
// GPT2-IR-NEXT: tfm.embedding
// GPT2-IR-NEXT: shard.all_reduce {{.*}} grid_axes = [1] : tensor<1x16x64xf32>
// GPT2-IR-COUNT-2: tfm.layer
// GPT2-IR: %[[A:.*]] = tfm.matmul {{.*}} : tensor<1x16x32xf32>, tensor<32x64xf32> -> tensor<1x16x64xf32>
// GPT2-IR-NEXT: %[[R:.*]] = shard.all_reduce %[[A]] on @mesh grid_axes = [1] : tensor<1x16x64xf32>
// GPT2-IR-NEXT: tfm.add %[[R]]
// GPT2-IR: %[[M:.*]] = tfm.matmul {{.*}} : tensor<1x16x128xf32>, tensor<128x64xf32> -> tensor<1x16x64xf32>
// GPT2-IR-NEXT: %[[R2:.*]] = shard.all_reduce %[[M]] on @mesh grid_axes = [1] : tensor<1x16x64xf32>
// GPT2-IR-NEXT: tfm.add %[[R2]]
// The logits stay split over the vocabulary.
// GPT2-IR: tfm.matmul {{.*}} transpose_rhs : tensor<1x16x64xf32>, tensor<48x64xf32> -> tensor<1x16x48xf32>
// GPT2-IR-NOT: shard.

// Llama (8 query heads, 2 kv heads): no biases, the same count.
// RUN: pmlir-gen llama --layers 2 --hidden 64 --heads 8 --kv-heads 2 --ffn 176 --vocab 100 --seq 16 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-partition \
// RUN:       --pmlir-comm-report -o /dev/null | FileCheck %s --check-prefix=LLAMA
// LLAMA: "totals": {
// LLAMA-NEXT: "all_reduce": {
// LLAMA-NEXT: "bytes_per_rank": 20480,
// LLAMA-NEXT: "count": 5,
// LLAMA-NEXT: "seconds": {{.*}},
// LLAMA-NEXT: "wire_bytes_per_rank": 20480
// LLAMA-NEXT: }
// LLAMA-NEXT: }

// tp = 4 on 8 heads and an FFN of 176: 5 all-reduces of 2*16*64 f32; in a
// ring of 4 each rank sends 2 * 3/4 of each tensor.
// RUN: pmlir-gen llama --layers 2 --hidden 64 --heads 8 --kv-heads 4 --ffn 176 --vocab 100 --seq 16 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=4" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-partition \
// RUN:       --pmlir-comm-report -o /dev/null | FileCheck %s --check-prefix=TP4
// TP4: "totals": {
// TP4-NEXT: "all_reduce": {
// TP4-NEXT: "bytes_per_rank": 40960,
// TP4-NEXT: "count": 5,
// TP4-NEXT: "seconds": {{.*}},
// TP4-NEXT: "wire_bytes_per_rank": 61440

// The modeled time: each all_reduce is a ring of 2*3 steps; on links of
// 50 GB/s and 10 us over tp, 6 * 10 us + 12288 B / 50 GB/s = 60.24576 us.
// Without links, 100 GB/s and 5 us: 6 * 5 us + 12288 B / 100 GB/s.
// RUN: pmlir-gen llama --layers 2 --hidden 64 --heads 8 --kv-heads 4 --ffn 176 --vocab 100 --seq 16 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=4" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-partition \
// RUN:       --pmlir-comm-report=links=tp=50:10,dp=1:1 -o /dev/null | FileCheck %s --check-prefix=LINKS
// LINKS: "kind": "all_reduce",
// LINKS: "seconds": 6.02457{{[0-9]*}}e-05,
// LINKS: "total": {
// LINKS-NEXT: "bytes_per_rank": 40960,
// LINKS-NEXT: "count": 5,
// LINKS-NEXT: "seconds": 0.000301228{{[0-9]*}},
// RUN: pmlir-gen llama --layers 2 --hidden 64 --heads 8 --kv-heads 4 --ffn 176 --vocab 100 --seq 16 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=4" \
// RUN:   | pmlir-opt --pmlir-megatron-recipe --pmlir-sharding-propagation --pmlir-partition \
// RUN:       --pmlir-comm-report -o /dev/null | FileCheck %s --check-prefix=DEFAULT-LINKS
// DEFAULT-LINKS: "seconds": 3.01228{{[0-9]*}}e-05,

// Malformed links: an error naming the entry and the form.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | not pmlir-opt --pmlir-comm-report=links=tp=50 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-LINK
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | not pmlir-opt --pmlir-comm-report=links=tp=0:1 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-LINK
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | not pmlir-opt --pmlir-comm-report=links=tp=1:1,tp=2:2 -o /dev/null 2>&1 | FileCheck %s --check-prefix=TWICE
// BAD-LINK: error: pmlir-comm-report: link '{{.*}}' is not AXIS=GBPS:US
// BAD-LINK-NOT: note
// TWICE: error: pmlir-comm-report: link of axis 'tp' given twice

// A file that cannot be written: an error, no crash.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | not pmlir-opt --pmlir-comm-report=output=%t.missing/dir/comm.json -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNWRITABLE
// UNWRITABLE: error: cannot write the comm report to '{{.*}}missing/dir/comm.json'
