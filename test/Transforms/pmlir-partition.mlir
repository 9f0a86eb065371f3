// RUN: pmlir-opt %s --pmlir-partition --split-input-file --verify-diagnostics | FileCheck %s

// A row-parallel matmul whose output the consumer wants split over tp along
// the rows: the pending sum is reduce-scattered, not all-reduced.
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  // CHECK: shard.grid @mesh(shape = 2x2)
  // CHECK-LABEL: func.func @pending_to_split
  // CHECK-SAME: %[[X:.*]]: tensor<4x4xf32> {{.*}}, %[[W:.*]]: tensor<4x6xf32> {{.*}} -> (tensor<2x6xf32>
  // CHECK: %[[Y:.*]] = tfm.matmul %[[X]], %[[W]] : tensor<4x4xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  // CHECK: %[[R:.*]] = shard.reduce_scatter %[[Y]] on @mesh grid_axes = [1] scatter_axis = 0 : tensor<4x6xf32> -> tensor<2x6xf32>
  // CHECK: return %[[R]]
  func.func @pending_to_split(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
                              %w: tensor<8x6xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>})
      -> (tensor<4x6xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>}) {
    %y = tfm.matmul %x, %w {tfm.shardings = [#tfm.sharding<[[], []], pending = ["tp"]>]} : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
    return %y : tensor<4x6xf32>
  }

  // tp moves from the rows to the columns in one all_to_all; dp leaves the
  // rows: all_gather.
  // CHECK-LABEL: func.func @moves
  // CHECK: %[[S:.*]] = tfm.scale %{{.*}} : tensor<1x8xf32>
  // CHECK: %[[A:.*]] = shard.all_to_all %[[S]] on @mesh grid_axes = [1] split_axis = 1 concat_axis = 0 : tensor<1x8xf32> -> tensor<2x4xf32>
  // CHECK: %[[G:.*]] = shard.all_gather %[[A]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  // CHECK: return %[[G]]
  func.func @moves(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[["dp", "tp"], []]>})
      -> (tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) {
    %y = tfm.scale %x, 2.0 {tfm.shardings = [#tfm.sharding<[["dp", "tp"], []]>]} : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }

  // A vocab-parallel embedding looks up its block of rows, offset by its tp
  // index times the local rows; the sum is pending until the norm.
  // CHECK-LABEL: func.func @vocab_parallel
  // CHECK-SAME: %[[T:.*]]: tensor<6x4xf32>
  // CHECK: %[[I:.*]] = shard.process_multi_index on @mesh axes = [1] : index
  // CHECK: %[[ROWS:.*]] = arith.constant 6 : index
  // CHECK: %[[OFF:.*]] = arith.muli %[[I]], %[[ROWS]] : index
  // CHECK: %[[E:.*]] = tfm.embedding %[[T]][%{{.*}}] rows_from %[[OFF]] : tensor<6x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  // CHECK: %[[R:.*]] = shard.all_reduce %[[E]] on @mesh grid_axes = [1] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  // CHECK: tfm.layernorm %[[R]]
  func.func @vocab_parallel(%t: tensor<12x4xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>},
                            %ids: tensor<2x3xi64>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
    %e = tfm.embedding %t[%ids] {tfm.shardings = [#tfm.sharding<[[], [], []], pending = ["tp"]>]} : tensor<12x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
    %n = tfm.layernorm %e, %g, %b eps = 1.0e-05 {tfm.shardings = [#tfm.sharding<[[], [], []]>]} : tensor<2x3x4xf32>, tensor<4xf32>
    return %n : tensor<2x3x4xf32>
  }

  // Heads split over tp: split_heads makes the local heads; the parts of a
  // replicated fused weight are sliced locally (no communication).
  // CHECK-LABEL: func.func @heads
  // CHECK: %[[P:.*]]:2 = tfm.split %{{.*}} dim = 1 : tensor<8x16xf32> -> tensor<8x8xf32>, tensor<8x8xf32>
  // CHECK: %[[Q:.*]] = shard.all_slice %[[P]]#0 on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x8xf32> -> tensor<8x4xf32>
  // CHECK: %[[M:.*]] = tfm.matmul %{{.*}}, %[[Q]] : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
  // CHECK: tfm.split_heads %[[M]] heads = 2 : tensor<2x3x4xf32> -> tensor<2x2x3x2xf32>
  func.func @heads(%x: tensor<2x3x8xf32>, %w: tensor<8x16xf32>) -> (tensor<2x4x3x2xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"], [], []]>}) {
    %p:2 = tfm.split %w dim = 1 {tfm.shardings = [#tfm.sharding<[[], ["tp"]]>, #tfm.sharding<[[], ["tp"]]>]} : tensor<8x16xf32> -> tensor<8x8xf32>, tensor<8x8xf32>
    %m = tfm.matmul %x, %p#0 {tfm.shardings = [#tfm.sharding<[[], [], ["tp"]]>]} : tensor<2x3x8xf32>, tensor<8x8xf32> -> tensor<2x3x8xf32>
    %h = tfm.split_heads %m heads = 4 {tfm.shardings = [#tfm.sharding<[[], ["tp"], [], []]>]} : tensor<2x3x8xf32> -> tensor<2x4x3x2xf32>
    return %h : tensor<2x4x3x2xf32>
  }

  // Queries split over the sequence: positions start at the block's first
  // one, and the causal mask is placed by the block's offset (Skv - S = 0
  // plus the tp index times the local sequence).
  // CHECK-LABEL: func.func @sequence
  // CHECK: %[[I:.*]] = shard.process_multi_index on @mesh axes = [1] : index
  // CHECK: %[[N:.*]] = arith.constant 4 : index
  // CHECK: %[[OFF:.*]] = arith.muli %[[I]], %[[N]] : index
  // CHECK: %[[POS:.*]] = tfm.arange start = 0 plus %[[OFF]] : tensor<4xi64>
  // CHECK: %[[Q:.*]] = tfm.rope %{{.*}}, %[[POS]]
  // CHECK: tfm.attention %[[Q]], %{{.*}}, %{{.*}} causal query_offset %{{.*}} scale
  // CHECK-SAME: tensor<1x2x4x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x4x4xf32>
  func.func @sequence(%q: tensor<1x2x8x4xf32> {tfm.sharding = #tfm.sharding<[[], [], ["tp"], []]>}, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>)
      -> (tensor<1x2x8x4xf32> {tfm.sharding = #tfm.sharding<[[], [], ["tp"], []]>}) {
    %p = tfm.arange start = 0 {tfm.shardings = [#tfm.sharding<[["tp"]]>]} : tensor<8xi64>
    %r = tfm.rope %q, %p theta = 1.0e+04 {tfm.shardings = [#tfm.sharding<[[], [], ["tp"], []]>]} : tensor<1x2x8x4xf32>, tensor<8xi64>
    %o = tfm.attention %r, %k, %v causal scale = 0.5 {tfm.shardings = [#tfm.sharding<[[], [], ["tp"], []]>]} : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x2x8x4xf32>
    return %o : tensor<1x2x8x4xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @unpropagated(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{'tfm.gelu' op has no tfm.shardings; run pmlir-sharding-propagation first}}
    %y = tfm.gelu %x tanh : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// expected-error @+1 {{partitioning needs the module attribute tfm.mesh}}
module {
  func.func @no_mesh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    return %x : tensor<4x8xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @full_to_pending(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{'tfm.add' op cannot reshard an operand from #tfm.sharding<[[], []]> to #tfm.sharding<[[], []], pending = ["tp"]>: a full value cannot become a pending sum}}
    %z = tfm.add %x, %y {tfm.shardings = [#tfm.sharding<[[], []], pending = ["tp"]>]} : tensor<4x8xf32>, tensor<4x8xf32>
    return %z : tensor<4x8xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  func.func @uneven(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
    // expected-error @+1 {{'tfm.gelu' op has tfm.shardings entry #tfm.sharding<[["tp"], []]> splitting dimension 0 of 'tensor<6x8xf32>' over 4 devices, which do not divide it}}
    %y = tfm.gelu %x tanh {tfm.shardings = [#tfm.sharding<[["tp"], []]>]} : tensor<6x8xf32>
    return %y : tensor<6x8xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  func.func @count(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
    // expected-error @+1 {{'tfm.gelu' op has 2 tfm.shardings for 1 results}}
    %y = tfm.gelu %x tanh {tfm.shardings = [#tfm.sharding<[[], []]>, #tfm.sharding<[[], []]>]} : tensor<8x8xf32>
    return %y : tensor<8x8xf32>
  }
}
