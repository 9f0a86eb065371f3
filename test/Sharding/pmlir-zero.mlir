// pmlir-zero on a training step (pmlir-autodiff, pmlir-optimizer) whose
// weight is tp-split: its ZeRO sharding adds dp to the dimension with the
// most elements per device.
// RUN: pmlir-opt %s --pmlir-autodiff=keep-entry=false --pmlir-optimizer=keep-entry=false --pmlir-zero=stage=1 | FileCheck %s --check-prefixes=COMMON,STAGE1
// RUN: pmlir-opt %s --pmlir-autodiff=keep-entry=false --pmlir-optimizer=keep-entry=false --pmlir-zero=stage=2 | FileCheck %s --check-prefixes=COMMON,STAGE2
// RUN: pmlir-opt %s --pmlir-autodiff=keep-entry=false --pmlir-optimizer=keep-entry=false --pmlir-zero=stage=3 | FileCheck %s --check-prefixes=COMMON,STAGE3

module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  func.func @forward(%x: tensor<4x8x16xf32> {tfm.name = "x", tfm.role = "input", tfm.sharding = #tfm.sharding<[["dp"], [], []]>},
                     %labels: tensor<4x8xi64> {tfm.name = "labels", tfm.role = "label", tfm.sharding = #tfm.sharding<[["dp"], []]>},
                     %w: tensor<16x32xf32> {tfm.name = "w", tfm.role = "param", tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
                     %g: tensor<32xf32> {tfm.name = "g", tfm.role = "param"}) -> tensor<f32> {
    %y = tfm.matmul %x, %w : tensor<4x8x16xf32>, tensor<16x32xf32> -> tensor<4x8x32xf32>
    %n = tfm.rmsnorm %y, %g eps = 1.0e-06 : tensor<4x8x32xf32>, tensor<32xf32>
    %l = tfm.cross_entropy %n, %labels ignore_index = -100 : tensor<4x8x32xf32>, tensor<4x8xi64> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// COMMON: module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>, tfm.zero_stage = [[STAGE:[123]]] : i64}
// The parameters: pinned whole over dp (stages 1 and 2), dp-split (stage 3).
// STAGE1-SAME: {
// STAGE1: %arg2: tensor<16x32xf32> {tfm.name = "w", tfm.role = "param", tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"{{\]\]}}>}
// STAGE1-SAME: %arg3: tensor<32xf32> {tfm.name = "g", tfm.role = "param", tfm.sharding = #tfm.sharding<{{\[\[}}{{\]\]}}>}
// STAGE3: %arg2: tensor<16x32xf32> {tfm.name = "w", tfm.role = "param", tfm.sharding = #tfm.sharding<{{\[\[}}"dp"], ["tp"{{\]\]}}>}
// STAGE3-SAME: %arg3: tensor<32xf32> {tfm.name = "g", tfm.role = "param", tfm.sharding = #tfm.sharding<{{\[\[}}"dp"{{\]\]}}>}
// The optimizer state takes the ZeRO sharding at every stage.
// COMMON: tfm.name = "w.exp_avg", tfm.role = #tfm<role optimizer_state>, tfm.sharded_like = 2 : i64, tfm.sharding = #tfm.sharding<{{\[\[}}"dp"], ["tp"{{\]\]}}>
// COMMON: tfm.name = "g.exp_avg", tfm.role = #tfm<role optimizer_state>, tfm.sharded_like = 3 : i64, tfm.sharding = #tfm.sharding<{{\[\[}}"dp"{{\]\]}}>
// COMMON: tfm.name = "w.exp_avg_sq", {{.*}} tfm.sharding = #tfm.sharding<{{\[\["dp"\], \["tp"\]\]}}>

// Stage 3 gathers the parameter right before its use.
// STAGE3: %[[W:.*]] = tfm.sharding_constraint %arg2 to <{{\[\[\], \["tp"\]\]}}> : tensor<16x32xf32>
// STAGE3-NEXT: tfm.matmul %{{.*}}, %[[W]]

// Stage 2 and 3 shard each gradient where the backward makes it.
// STAGE2: %[[DW:.*]] = tfm.weight_grad
// STAGE2-NEXT: tfm.sharding_constraint %[[DW]] to <{{\[\["dp"\], \["tp"\]\]}}>
// STAGE3: %[[DW:.*]] = tfm.weight_grad
// STAGE3-NEXT: tfm.sharding_constraint %[[DW]] to <{{\[\["dp"\], \["tp"\]\]}}>

// Stage 1 shards it where it is first read: the gradient norm, then the
// update.
// STAGE1: %[[DW:.*]] = tfm.sharding_constraint %{{.*}} to <{{\[\["dp"\], \["tp"\]\]}}> : tensor<16x32xf32>
// STAGE1-NEXT: tfm.sum_squares %[[DW]]
// STAGE1: tfm.adamw %arg2, %[[DW]], %arg4, %arg6, %{{.*}}
