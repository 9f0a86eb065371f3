// A forward repeated over 3 microbatches of a stacked batch: each reads its
// token ids through tfm.microbatch, and the logits of the three are joined
// into those of the batch of 3; a loss is their mean. On a program cut
// into pipeline stages each repetition's fragments name their microbatch.
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 2 --max-positions 8 \
// RUN:   | pmlir-opt --pmlir-microbatch="microbatches=3" | FileCheck %s
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-microbatch="microbatches=2" | FileCheck %s --check-prefix=LOSS
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 \
// RUN:   | pmlir-opt --pmlir-pipeline-partition="stages=2" --pmlir-microbatch="microbatches=2" \
// RUN:   | FileCheck %s --check-prefix=STAGES
// One microbatch: the fragments name it, nothing is joined.
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 \
// RUN:   | pmlir-opt --pmlir-pipeline-partition="stages=2" --pmlir-microbatch="microbatches=1" \
// RUN:   | FileCheck %s --check-prefix=ONE

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: tensor<3x2x4xi64> {tfm.dims = ["microbatch", "batch", "seq"], tfm.name = "input_ids", tfm.role = #tfm<role input>}
// CHECK-SAME: -> tensor<6x4x11xf32>
// CHECK: %[[IDS0:.*]] = tfm.microbatch %arg0 index = 0 : tensor<3x2x4xi64> -> tensor<2x4xi64>
// CHECK: tfm.embedding %arg1[%[[IDS0]]]
// CHECK: %[[L0:.*]] = tfm.matmul %{{.*}}, %arg1 transpose_rhs
// CHECK: tfm.microbatch %arg0 index = 1
// CHECK: %[[L1:.*]] = tfm.matmul %{{.*}}, %arg1 transpose_rhs
// CHECK: tfm.microbatch %arg0 index = 2
// CHECK: %[[L2:.*]] = tfm.matmul %{{.*}}, %arg1 transpose_rhs
// CHECK: %[[ALL:.*]] = tfm.concat %[[L0]], %[[L1]], %[[L2]] dim = 0 : tensor<2x4x11xf32>, tensor<2x4x11xf32>, tensor<2x4x11xf32> -> tensor<6x4x11xf32>
// CHECK: return %[[ALL]]

// LOSS: tfm.microbatch %arg1 index = 0 : tensor<2x1x4xi64> -> tensor<1x4xi64>
// LOSS: %[[C0:.*]] = tfm.cross_entropy
// LOSS: %[[C1:.*]] = tfm.cross_entropy
// LOSS: %[[SUM:.*]] = tfm.add %[[C0]], %[[C1]] : tensor<f32>, tensor<f32>
// LOSS: %[[MEAN:.*]] = tfm.scale %[[SUM]], 5.000000e-01 : tensor<f32>
// LOSS: return %[[MEAN]] : tensor<f32>

// STAGES: pipe.fragment stage 0 "F" microbatch 0
// STAGES: pipe.fragment stage 1 "F" microbatch 0
// STAGES: %[[T0:.*]] = pipe.transfer %{{.*}} from 1 to 0 : tensor<1x4x11xf32>
// STAGES: pipe.fragment stage 0 "F" microbatch 1
// STAGES: pipe.fragment stage 1 "F" microbatch 1
// STAGES: %[[T1:.*]] = pipe.transfer %{{.*}} from 1 to 0 : tensor<1x4x11xf32>
// STAGES: tfm.concat %[[T0]], %[[T1]] dim = 0

// ONE: func.func @forward(%arg0: tensor<1x4xi64>
// ONE: pipe.fragment stage 0 "F" microbatch 0
// ONE-NOT: tfm.microbatch
// ONE-NOT: tfm.concat
// ONE: return

// Bad input: a gradient function (a training step accumulates those), a
// forward already repeated, no microbatch, no such function.
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-autodiff | not pmlir-opt --pmlir-microbatch="entry=grad" 2>&1 | FileCheck %s --check-prefix=GRAD
// GRAD: error: 'func.func' op is a gradient function: a training step accumulates its microbatches (pmlir-optimizer's grad-accum)
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 \
// RUN:   | not pmlir-opt --pmlir-microbatch --pmlir-microbatch 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: 'func.func' op is already repeated over microbatches (it reads them with tfm.microbatch)
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 \
// RUN:   | not pmlir-opt --pmlir-microbatch="microbatches=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: 'func.func' op cannot be repeated over 0 microbatches
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 \
// RUN:   | not pmlir-opt --pmlir-microbatch="entry=main" 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: error: pmlir-microbatch: no function @main to repeat
