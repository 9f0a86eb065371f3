// A GPT-2 gradient function cut into 2 stages: layers 0-1 with the
// embeddings, layers 2-3 with the head and loss; the activation goes
// forward and its gradient back through transfers, and the tied wte's two
// gradients become a stage sum.
// RUN: pmlir-gen gpt2 --layers 4 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 --loss \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-pipeline-partition="entry=grad stages=2" \
// RUN:   | FileCheck %s
// Split points override the balance: layer 3 alone on the last stage.
// RUN: pmlir-gen gpt2 --layers 4 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 --loss \
// RUN:   | pmlir-opt --pmlir-pipeline-partition="stages=2 split-points=3" | FileCheck %s --check-prefix=SPLIT
// A forward's logits go back to stage 0 (inference returns them on the
// first pipeline rank); its loss, a scalar, to every stage through a stage
// sum.
// RUN: pmlir-gen gpt2 --layers 4 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 \
// RUN:   | pmlir-opt --pmlir-pipeline-partition="stages=2" | FileCheck %s --check-prefix=LOGITS
// RUN: pmlir-gen gpt2 --layers 4 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 --loss \
// RUN:   | pmlir-opt --pmlir-pipeline-partition="stages=2" | FileCheck %s --check-prefix=LOSS
// More stages than layers, bad split points:
// RUN: pmlir-gen gpt2 --layers 2 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 --loss \
// RUN:   | not pmlir-opt --pmlir-pipeline-partition="stages=3" 2>&1 | FileCheck %s --check-prefix=TOO-MANY
// RUN: pmlir-gen gpt2 --layers 4 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 --loss \
// RUN:   | not pmlir-opt --pmlir-pipeline-partition="stages=3 split-points=2,2" 2>&1 | FileCheck %s --check-prefix=POINTS

// CHECK-LABEL: func.func @grad
// CHECK-SAME: pipe.stages = 2
// CHECK: tfm.arange
// CHECK: %[[F0:.*]]:{{[0-9]+}} = pipe.fragment stage 0 "F"
// CHECK:   tfm.embedding
// CHECK:   tfm.layer 0 :
// CHECK:   tfm.layer 1 :
// CHECK: %[[T:.*]] = pipe.transfer %[[F0]]#{{[0-9]+}} from 0 to 1
// CHECK: pipe.fragment stage 1 "F"
// CHECK:   tfm.layer 2 :
// CHECK:   tfm.layer 3 :
// CHECK:   tfm.cross_entropy
// CHECK: %[[B1:.*]]:{{[0-9]+}} = pipe.fragment stage 1 "B"
// CHECK:   tfm.layer 3 backward
// CHECK:   tfm.layer 2 backward
// CHECK: pipe.transfer %[[B1]]#{{[0-9]+}} from 1 to 0
// CHECK: %[[B0:.*]]:{{[0-9]+}} = pipe.fragment stage 0 "B"
// CHECK:   tfm.layer 1 backward
// CHECK:   tfm.layer 0 backward
// CHECK: %[[WTE:.*]] = pipe.stage_sum %[[B1]]#0, %[[B0]]#{{[0-9]+}} stages [1, 0] : tensor<97x64xf32>, tensor<97x64xf32> -> tensor<97x64xf32>
// CHECK: return %{{.*}}, %[[WTE]],

// SPLIT: pipe.fragment stage 0 "F"
// SPLIT:   tfm.layer 2 :
// SPLIT: pipe.transfer
// SPLIT: pipe.fragment stage 1 "F"
// SPLIT-NEXT: tfm.layer 3 :

// LOGITS: pipe.fragment stage 0 "F"
// LOGITS: %[[F1:.*]] = pipe.fragment stage 1 "F" : tensor<2x16x97xf32>
// LOGITS: %[[BACK:.*]] = pipe.transfer %[[F1]] from 1 to 0 : tensor<2x16x97xf32>
// LOGITS: return %[[BACK]]

// LOSS: %[[F1:.*]] = pipe.fragment stage 1 "F" : tensor<f32>
// LOSS: %[[ALL:.*]] = pipe.stage_sum %[[F1]] stages [1] : tensor<f32> -> tensor<f32>
// LOSS: return %[[ALL]]

// TOO-MANY: error: 'func.func' op has 2 tfm.layer blocks, fewer than the 3 pipeline stages to cut it into
// POINTS: error: 'func.func' op split points must rise from 1 to at most 3 (each stage at least one of the 4 layers), got 2 after 2
