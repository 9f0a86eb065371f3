// RUN: pmlir-opt %s --pmlir-export-shardings --split-input-file --verify-diagnostics | FileCheck %s

// Argument, constraint and result shardings become upstream shard.shard
// annotations on a grid made from tfm.mesh (grid axis i is mesh axis i);
// replicated arguments get none.
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4>} {
  // CHECK: shard.grid @mesh(shape = 2x4)
  // CHECK-LABEL: func.func @mlp
  // CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x32xf32>) -> tensor<4x32xf32>
  // CHECK-NOT: tfm.sharding
  // CHECK: %[[S:.*]] = shard.sharding @mesh split_axes = {{\[\[}}], [1]] : !shard.sharding
  // CHECK: %[[WS:.*]] = shard.shard %[[W]] to %[[S]] : tensor<8x32xf32>
  // CHECK: %[[H:.*]] = tfm.matmul %[[X]], %[[WS]]
  // CHECK: %[[C:.*]] = shard.sharding @mesh split_axes = {{\[\[}}0], [1]] : !shard.sharding
  // CHECK: %[[HS:.*]] = shard.shard %[[H]] to %[[C]] : tensor<4x32xf32>
  // CHECK: %[[G:.*]] = tfm.gelu %[[HS]]
  // CHECK: %[[R:.*]] = shard.sharding @mesh split_axes = {{\[\[}}0, 1], []] : !shard.sharding
  // CHECK: %[[GS:.*]] = shard.shard %[[G]] to %[[R]] : tensor<4x32xf32>
  // CHECK: return %[[GS]]
  func.func @mlp(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], []]>},
                 %w: tensor<8x32xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>})
      -> (tensor<4x32xf32> {tfm.sharding = #tfm.sharding<[["dp", "tp"], []]>}) {
    %h = tfm.matmul %x, %w : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    %c = tfm.sharding_constraint %h to <[["dp"], ["tp"]]> : tensor<4x32xf32>
    %g = tfm.gelu %c tanh : tensor<4x32xf32>
    return %g : tensor<4x32xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @pending(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{'tfm.sharding_constraint' op has the sharding #tfm.sharding<[[], []], pending = ["tp"]>, whose pending sum upstream shard annotations cannot express}}
    %c = tfm.sharding_constraint %x to <[[], []], pending = ["tp"]> : tensor<4x8xf32>
    return %c : tensor<4x8xf32>
  }
}

// -----

// expected-error @+1 {{exporting shardings needs the module attribute tfm.mesh}}
module {
  func.func @no_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
