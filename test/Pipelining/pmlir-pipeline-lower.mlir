// One pipeline rank's program from a GPT-2 training step cut into 2 stages
// on pp=2, 1F1B over 2 microbatches: each rank's fragments in its
// schedule's order (rank 0: 0F0 0F1 0B0 0B1, rank 1: 1F0 1B0 1F1 1B1), each
// marked for the trace; activations and gradients cross as tagged sends and
// receives, whose tags pair up (rank 0 sends 1 and 3, receives 2 and 4); the
// stage sums (the tied wte gradient, summed over the microbatches first, and
// the loss) become pp all-reduces.
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=pp=2" \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-pipeline-partition="entry=grad stages=2" \
// RUN:       --pmlir-optimizer="entry=grad grad-accum=2" --pmlir-pipeline-schedule="schedule=1f1b microbatches=2" \
// RUN:       --pmlir-sharding-pipeline -o %t.mlir
// RUN: pmlir-opt %t.mlir --pmlir-pipeline-lower="rank=0 trace=true" | FileCheck %s --check-prefix=RANK0
// RUN: pmlir-opt %t.mlir --pmlir-pipeline-lower="rank=1 trace=true" | FileCheck %s --check-prefix=RANK1
// RUN: pmlir-opt %t.mlir --pmlir-pipeline-lower="rank=1" | FileCheck %s --check-prefix=UNTRACED

// RANK0-LABEL: func.func @train_step
// RANK0-NOT: pipe.schedule
// RANK0: pipe.work_begin stage 0 "F" microbatch 0
// RANK0:   tfm.embedding
// RANK0: pipe.work_end stage 0 "F" microbatch 0
// RANK0: shard.send {{.*}} destination = [1] {pipe.tag = 1 : i64}
// RANK0: pipe.work_begin stage 0 "F" microbatch 1
// RANK0: shard.send {{.*}} destination = [1] {pipe.tag = 3 : i64}
// RANK0: shard.recv {{.*}} source = [1] {pipe.tag = 2 : i64}
// RANK0: pipe.work_begin stage 0 "B" microbatch 0
// RANK0: shard.recv {{.*}} source = [1] {pipe.tag = 4 : i64}
// RANK0: pipe.work_begin stage 0 "B" microbatch 1
// RANK0: shard.all_reduce {{.*}} : tensor<11x16xf32> -> tensor<11x16xf32>
// RANK0-NOT: shard.all_reduce {{.*}} : tensor<11x16xf32>
// RANK0: shard.all_reduce {{.*}} : tensor<f32> -> tensor<f32>
// RANK0: tfm.adamw
// RANK0-NOT: pipe.
// RANK0: return

// RANK1-LABEL: func.func @train_step
// RANK1: shard.recv {{.*}} source = [0] {pipe.tag = 1 : i64}
// RANK1: pipe.work_begin stage 1 "F" microbatch 0
// RANK1:   tfm.cross_entropy
// RANK1: pipe.work_begin stage 1 "B" microbatch 0
// RANK1: shard.send {{.*}} destination = [0] {pipe.tag = 2 : i64}
// RANK1: shard.recv {{.*}} source = [0] {pipe.tag = 3 : i64}
// RANK1: pipe.work_begin stage 1 "F" microbatch 1
// RANK1: pipe.work_begin stage 1 "B" microbatch 1
// RANK1: shard.send {{.*}} destination = [0] {pipe.tag = 4 : i64}
// RANK1: shard.all_reduce

// UNTRACED-LABEL: func.func @train_step
// UNTRACED-NOT: pipe.work_begin
// UNTRACED: return

// Over 4 microbatches (rank 0: 0F0 0F1 0B0 0F2 0B1 0F3 0B2 0B3) each
// microbatch's gradients join their running sum right after its backward
// pass made them, not after the last one: one microbatch's gradients are
// live at a time.
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=pp=2" \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-pipeline-partition="entry=grad stages=2" \
// RUN:       --pmlir-optimizer="entry=grad grad-accum=4" --pmlir-pipeline-schedule="schedule=1f1b microbatches=4" \
// RUN:       --pmlir-sharding-pipeline -o %t-4.mlir
// RUN: pmlir-opt %t-4.mlir --pmlir-pipeline-lower="rank=0 trace=true" | FileCheck %s --check-prefix=ACCUM
// ACCUM: pipe.work_begin stage 0 "B" microbatch 1
// ACCUM: tfm.add {{.*}} : tensor<16x48xf32>, tensor<16x48xf32>
// ACCUM: pipe.work_begin stage 0 "B" microbatch 2
// ACCUM: tfm.add {{.*}} : tensor<16x48xf32>, tensor<16x48xf32>
// ACCUM: pipe.work_begin stage 0 "B" microbatch 3
// ACCUM: tfm.add {{.*}} : tensor<16x48xf32>, tensor<16x48xf32>
// ACCUM: tfm.adamw

// Inference: a forward repeated over 2 microbatches. The last stage sends
// each microbatch's logits to rank 0 as soon as it has them and returns
// nothing; rank 0 receives them after its own forwards and joins them.
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=pp=2" \
// RUN:   | pmlir-opt --pmlir-pipeline-partition="stages=2" --pmlir-microbatch="microbatches=2" \
// RUN:       --pmlir-pipeline-schedule="schedule=1f1b microbatches=2" --pmlir-sharding-pipeline -o %t-forward.mlir
// RUN: pmlir-opt %t-forward.mlir --pmlir-pipeline-lower="entry=forward rank=0 trace=true" | FileCheck %s --check-prefix=FORWARD0
// RUN: pmlir-opt %t-forward.mlir --pmlir-pipeline-lower="entry=forward rank=1 trace=true" | FileCheck %s --check-prefix=FORWARD1

// FORWARD0-LABEL: func.func @forward(%arg0: tensor<2x1x4xi64>
// FORWARD0: pipe.work_begin stage 0 "F" microbatch 0
// FORWARD0: shard.send {{.*}} destination = [1] {pipe.tag = 1 : i64}
// FORWARD0: pipe.work_begin stage 0 "F" microbatch 1
// FORWARD0: shard.send {{.*}} destination = [1] {pipe.tag = 3 : i64}
// FORWARD0: %[[L0:.*]] = shard.recv {{.*}} source = [1] {pipe.tag = 2 : i64} : (tensor<1x4x11xf32>) -> tensor<1x4x11xf32>
// FORWARD0: %[[L1:.*]] = shard.recv {{.*}} source = [1] {pipe.tag = 4 : i64} : (tensor<1x4x11xf32>) -> tensor<1x4x11xf32>
// FORWARD0: %[[ALL:.*]] = tfm.concat %[[L0]], %[[L1]] dim = 0
// FORWARD0: return %[[ALL]] : tensor<2x4x11xf32>

// FORWARD1-LABEL: func.func @forward(
// FORWARD1-NOT: tensor<2x1x4xi64>
// FORWARD1-SAME: ) {
// FORWARD1: shard.recv {{.*}} source = [0] {pipe.tag = 1 : i64}
// FORWARD1: pipe.work_end stage 1 "F" microbatch 0
// FORWARD1-NEXT: shard.send {{.*}} destination = [0] {pipe.tag = 2 : i64}
// FORWARD1: shard.recv {{.*}} source = [0] {pipe.tag = 3 : i64}
// FORWARD1: pipe.work_end stage 1 "F" microbatch 1
// FORWARD1-NEXT: shard.send {{.*}} destination = [0] {pipe.tag = 4 : i64}
// FORWARD1-NEXT: return{{$}}

// Bad input: a rank the schedule does not have, no schedule, no mesh.
// RUN: not pmlir-opt %t.mlir --pmlir-pipeline-lower="rank=2" 2>&1 | FileCheck %s --check-prefix=RANK
// RANK: error: 'func.func' op has no pipeline rank 2: its schedule has 2
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-pipeline-partition="entry=grad stages=2" \
// RUN:   | not pmlir-opt --pmlir-pipeline-lower="entry=grad rank=0" 2>&1 | FileCheck %s --check-prefix=NO-SCHEDULE
// NO-SCHEDULE: error: 'func.func' op needs one pipe.schedule in its module to be lowered to a pipeline rank, the module has 0
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-pipeline-partition="entry=grad stages=2" --pmlir-pipeline-schedule="schedule=gpipe" \
// RUN:   | not pmlir-opt --pmlir-pipeline-lower="entry=grad rank=0" 2>&1 | FileCheck %s --check-prefix=NO-MESH
// NO-MESH: error: 'func.func' op must be partitioned on a mesh (a shard.grid @mesh) before its pipeline ranks are built
