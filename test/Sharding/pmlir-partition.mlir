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
  // replicated fused weight are sliced locally (no communication), each
  // part in the view [parts, the rest], before the split.
  // CHECK-LABEL: func.func @heads
  // CHECK-SAME: %[[W:[^:]*]]: tensor<8x16xf32>
  // CHECK: %[[E:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0], [1, 2]] output_shape [8, 2, 8] : tensor<8x16xf32> into tensor<8x2x8xf32>
  // CHECK: %[[S:.*]] = shard.all_slice %[[E]] on @mesh grid_axes = [1] slice_axis = 2 : tensor<8x2x8xf32> -> tensor<8x2x4xf32>
  // CHECK: %[[C:.*]] = tensor.collapse_shape %[[S]] {{\[\[}}0], [1, 2]] : tensor<8x2x4xf32> into tensor<8x8xf32>
  // CHECK: %[[P:.*]]:2 = tfm.split %[[C]] dim = 1 : tensor<8x8xf32> -> tensor<8x4xf32>, tensor<8x4xf32>
  // CHECK: %[[M:.*]] = tfm.matmul %{{.*}}, %[[P]]#0 : tensor<2x3x8xf32>, tensor<8x4xf32> -> tensor<2x3x4xf32>
  // CHECK: tfm.split_heads %[[M]] heads = 2 : tensor<2x3x4xf32> -> tensor<2x2x3x2xf32>
  func.func @heads(%x: tensor<2x3x8xf32>, %w: tensor<8x16xf32>) -> (tensor<2x4x3x2xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"], [], []]>}) {
    %p:2 = tfm.split %w dim = 1 {tfm.shardings = [#tfm.sharding<[[], ["tp"]]>, #tfm.sharding<[[], ["tp"]]>]} : tensor<8x16xf32> -> tensor<8x8xf32>, tensor<8x8xf32>
    %m = tfm.matmul %x, %p#0 {tfm.shardings = [#tfm.sharding<[[], [], ["tp"]]>]} : tensor<2x3x8xf32>, tensor<8x8xf32> -> tensor<2x3x8xf32>
    %h = tfm.split_heads %m heads = 4 {tfm.shardings = [#tfm.sharding<[[], ["tp"], [], []]>]} : tensor<2x3x8xf32> -> tensor<2x4x3x2xf32>
    return %h : tensor<2x4x3x2xf32>
  }

  // A fused weight whose parts are each split over tp is held as a rank's
  // block of every part (8x8 of 8x16) and split without communication;
  // gathering it whole runs in the view [parts, the rest]: rank 1 holds
  // columns 4-7 and 12-15, which land in their places.
  // CHECK-LABEL: func.func @fused_parts
  // CHECK-SAME: %[[W:[^:]*]]: tensor<8x8xf32> {tfm.global_type = tensor<8x16xf32>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]], parts = [1, 2]>}
  // CHECK-NEXT: %[[P:.*]]:2 = tfm.split %[[W]] dim = 1 : tensor<8x8xf32> -> tensor<8x4xf32>, tensor<8x4xf32>
  // CHECK: %[[E:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0], [1, 2]] output_shape [8, 2, 4] : tensor<8x8xf32> into tensor<8x2x4xf32>
  // CHECK: %[[G:.*]] = shard.all_gather %[[E]] on @mesh grid_axes = [1] gather_axis = 2 : tensor<8x2x4xf32> -> tensor<8x2x8xf32>
  // CHECK: %[[C:.*]] = tensor.collapse_shape %[[G]] {{\[\[}}0], [1, 2]] : tensor<8x2x8xf32> into tensor<8x16xf32>
  // CHECK: return %[[P]]#1, %[[C]] : tensor<8x4xf32>, tensor<8x16xf32>
  func.func @fused_parts(%w: tensor<8x16xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]], parts = [1, 2]>})
      -> (tensor<8x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}, tensor<8x16xf32>) {
    %p:2 = tfm.split %w dim = 1 {tfm.shardings = [#tfm.sharding<[[], ["tp"]]>, #tfm.sharding<[[], ["tp"]]>]} : tensor<8x16xf32> -> tensor<8x8xf32>, tensor<8x8xf32>
    return %p#1, %w : tensor<8x8xf32>, tensor<8x16xf32>
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

// Megatron's vocab-parallel cross entropy: the logits (tokens on dp,
// vocabulary on tp, 10 = 2 x 5) are never gathered; a max all-reduce and a
// sum all-reduce of [tokens, 2] over tp, then the per-token parts and
// labels gathered over dp.
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  // CHECK-LABEL: func.func @vocab_parallel_cross_entropy
  // CHECK-SAME: %[[L:.*]]: tensor<2x3x5xf32> {{.*}}, %[[Y:.*]]: tensor<2x3xi64>
  // CHECK-NOT: shard.all_gather %[[L]]
  // CHECK: %[[I:.*]] = shard.process_multi_index on @mesh axes = [1] : index
  // CHECK: %[[OFF:.*]] = arith.muli %[[I]], %{{.*}} : index
  // CHECK: %[[M:.*]] = tfm.row_max %[[L]] vocab_from %[[OFF]] vocab = 10 : tensor<2x3x5xf32> -> tensor<2x3xf32>
  // CHECK: %[[GM:.*]] = shard.all_reduce %[[M]] on @mesh grid_axes = [1] reduction = max : tensor<2x3xf32> -> tensor<2x3xf32>
  // CHECK: %[[P:.*]] = tfm.cross_entropy_parts %[[L]], %[[Y]], %[[GM]] vocab_from %[[OFF]] vocab = 10 : tensor<2x3x5xf32>, tensor<2x3xi64>, tensor<2x3xf32> -> tensor<2x3x2xf32>
  // CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @mesh grid_axes = [1] : tensor<2x3x2xf32> -> tensor<2x3x2xf32>
  // CHECK: %[[AP:.*]] = shard.all_gather %[[S]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x3x2xf32> -> tensor<4x3x2xf32>
  // CHECK: %[[AY:.*]] = shard.all_gather %[[Y]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x3xi64> -> tensor<4x3xi64>
  // CHECK: %[[LOSS:.*]] = tfm.cross_entropy_combine %[[AP]], %[[AY]] ignore_index = -100 : tensor<4x3x2xf32>, tensor<4x3xi64> -> tensor<f32>
  // CHECK: return %[[LOSS]]
  func.func @vocab_parallel_cross_entropy(%l: tensor<4x3x10xf32> {tfm.sharding = #tfm.sharding<[["dp"], [], ["tp"]]>},
                                          %y: tensor<4x3xi64> {tfm.sharding = #tfm.sharding<[["dp"], []]>}) -> tensor<f32> {
    %loss = tfm.cross_entropy %l, %y ignore_index = -100 {tfm.shardings = [#tfm.sharding<[]>]} : tensor<4x3x10xf32>, tensor<4x3xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The loss's gradient takes the forward's statistics: no third or fourth
// all-reduce, no second row max. A gradient of other labels finds its own.
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  // CHECK-LABEL: func.func @vocab_parallel_loss_gradient
  // CHECK-SAME: %[[L:[^:]*]]: tensor<2x3x5xf32> {{.*}}, %[[Y:[^:]*]]: tensor<2x3xi64> {{.*}}, %[[Z:[^:]*]]: tensor<2x3xi64> {{.*}}, %[[G:[^:]*]]: tensor<f32>, %[[N:[^:]*]]: tensor<f32>
  // CHECK: %[[OFF:.*]] = arith.muli
  // CHECK: %[[GM:.*]] = shard.all_reduce %{{.*}} on @mesh grid_axes = [1] reduction = max
  // CHECK: %[[P:.*]] = tfm.cross_entropy_parts %[[L]], %[[Y]], %[[GM]]
  // CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @mesh grid_axes = [1] :
  // CHECK: tfm.cross_entropy_combine
  // CHECK-NOT: tfm.row_max
  // CHECK: tfm.cross_entropy_grad %[[L]], %[[Y]], %[[G]], %[[N]] normalized by %[[GM]], %[[S]] vocab_from %[[OFF]] vocab = 10
  // CHECK: tfm.row_max %[[L]]
  // CHECK: shard.all_reduce {{.*}} reduction = max
  // CHECK: %[[PZ:.*]] = tfm.cross_entropy_parts %[[L]], %[[Z]]
  // CHECK: %[[SZ:.*]] = shard.all_reduce %[[PZ]]
  // CHECK: tfm.cross_entropy_grad %[[L]], %[[Z]], %[[G]], %[[N]] normalized by %{{.*}}, %[[SZ]]
  func.func @vocab_parallel_loss_gradient(%l: tensor<4x3x10xf32> {tfm.sharding = #tfm.sharding<[["dp"], [], ["tp"]]>},
                                          %y: tensor<4x3xi64> {tfm.sharding = #tfm.sharding<[["dp"], []]>},
                                          %z: tensor<4x3xi64> {tfm.sharding = #tfm.sharding<[["dp"], []]>},
                                          %g: tensor<f32>, %n: tensor<f32>)
      -> (tensor<f32>, tensor<4x3x10xf32> {tfm.sharding = #tfm.sharding<[["dp"], [], ["tp"]]>},
          tensor<4x3x10xf32> {tfm.sharding = #tfm.sharding<[["dp"], [], ["tp"]]>}) {
    %loss = tfm.cross_entropy %l, %y ignore_index = -100 {tfm.shardings = [#tfm.sharding<[]>]} : tensor<4x3x10xf32>, tensor<4x3xi64> -> tensor<f32>
    %dl = tfm.cross_entropy_grad %l, %y, %g, %n ignore_index = -100 {tfm.shardings = [#tfm.sharding<[["dp"], [], ["tp"]]>]} : tensor<4x3x10xf32>, tensor<4x3xi64>, tensor<f32>, tensor<f32>
    %dz = tfm.cross_entropy_grad %l, %z, %g, %n ignore_index = -100 {tfm.shardings = [#tfm.sharding<[["dp"], [], ["tp"]]>]} : tensor<4x3x10xf32>, tensor<4x3xi64>, tensor<f32>, tensor<f32>
    return %loss, %dl, %dz : tensor<f32>, tensor<4x3x10xf32>, tensor<4x3x10xf32>
  }
}

// -----

// With the vocabulary whole (tokens on dp) the gradient takes the
// forward's local max and parts too, with no vocabulary block.
module attributes {tfm.mesh = #tfm.mesh<dp = 2>} {
  // CHECK-LABEL: func.func @data_parallel_loss_gradient
  // CHECK-SAME: %[[L:[^:]*]]: tensor<2x3x10xf32> {{.*}}, %[[Y:[^:]*]]: tensor<2x3xi64>
  // CHECK: %[[M:.*]] = tfm.row_max %[[L]] : tensor<2x3x10xf32> -> tensor<2x3xf32>
  // CHECK: %[[P:.*]] = tfm.cross_entropy_parts %[[L]], %[[Y]], %[[M]] vocab = 10
  // CHECK-NOT: tfm.row_max
  // CHECK: tfm.cross_entropy_grad %[[L]], %[[Y]], %{{.*}}, %{{.*}} normalized by %[[M]], %[[P]] ignore_index = -100
  func.func @data_parallel_loss_gradient(%l: tensor<4x3x10xf32> {tfm.sharding = #tfm.sharding<[["dp"], [], []]>},
                                         %y: tensor<4x3xi64> {tfm.sharding = #tfm.sharding<[["dp"], []]>},
                                         %g: tensor<f32>, %n: tensor<f32>)
      -> (tensor<f32>, tensor<4x3x10xf32> {tfm.sharding = #tfm.sharding<[["dp"], [], []]>}) {
    %loss = tfm.cross_entropy %l, %y ignore_index = -100 {tfm.shardings = [#tfm.sharding<[]>]} : tensor<4x3x10xf32>, tensor<4x3xi64> -> tensor<f32>
    %dl = tfm.cross_entropy_grad %l, %y, %g, %n ignore_index = -100 {tfm.shardings = [#tfm.sharding<[["dp"], [], []]>]} : tensor<4x3x10xf32>, tensor<4x3xi64>, tensor<f32>, tensor<f32>
    return %loss, %dl : tensor<f32>, tensor<4x3x10xf32>
  }
}

// -----

// Splits the devices do not divide are padded (ceil(size / devices) per
// device, the padding at the end): a pending sum is padded before its
// reduce_scatter, a gather cuts the padding off, a slice pads first.
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  // CHECK-LABEL: func.func @padded_scatter
  // CHECK-SAME: -> (tensor<4x3xf32> {tfm.global_type = tensor<4x5xf32>, tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]]>})
  // CHECK: %[[Y:.*]] = tfm.matmul {{.*}} -> tensor<4x5xf32>
  // CHECK: %[[P:.*]] = tensor.pad %[[Y]] low[0, 0] high[0, 1]
  // CHECK: } : tensor<4x5xf32> to tensor<4x6xf32>
  // CHECK: shard.reduce_scatter %[[P]] on @mesh grid_axes = [0] scatter_axis = 1 : tensor<4x6xf32> -> tensor<4x3xf32>
  func.func @padded_scatter(%x: tensor<4x6xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
                            %w: tensor<6x5xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>})
      -> (tensor<4x5xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) {
    %y = tfm.matmul %x, %w {tfm.shardings = [#tfm.sharding<[[], []], pending = ["tp"]>]} : tensor<4x6xf32>, tensor<6x5xf32> -> tensor<4x5xf32>
    return %y : tensor<4x5xf32>
  }

  // CHECK-LABEL: func.func @padded_gather_and_slice
  // CHECK-SAME: %[[X:.*]]: tensor<3x4xf32> {tfm.global_type = tensor<5x4xf32>, tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>}
  // CHECK: %[[G:.*]] = shard.all_gather %[[X]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<3x4xf32> -> tensor<6x4xf32>
  // CHECK: %[[C:.*]] = tensor.extract_slice %[[G]][0, 0] [5, 4] [1, 1] : tensor<6x4xf32> to tensor<5x4xf32>
  // CHECK: %[[S:.*]] = tfm.softmax %[[C]] : tensor<5x4xf32>
  // CHECK: %[[P:.*]] = tensor.pad %[[S]] low[0, 0] high[1, 0]
  // CHECK: shard.all_slice %[[P]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<6x4xf32> -> tensor<3x4xf32>
  func.func @padded_gather_and_slice(%x: tensor<5x4xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>})
      -> (tensor<5x4xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>}) {
    %s = tfm.softmax %x {tfm.shardings = [#tfm.sharding<[[], []]>]} : tensor<5x4xf32>
    return %s : tensor<5x4xf32>
  }
}

// -----

// Sub-axes: the grid cuts tp into the parts the shardings name, so a block
// along "tp:(1)2" of a tp of 4 is the coordinate on grid axis 0, along
// "tp:(2)2" the coordinate on grid axis 1.
module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  // CHECK: shard.grid @mesh(shape = 2x2) {tfm.grid_axes = ["tp:(1)2", "tp:(2)2"]}
  // CHECK-LABEL: func.func @sub_axis_blocks
  // CHECK: %[[I:.*]] = shard.process_multi_index on @mesh axes = [1] : index
  // CHECK: %[[OFF:.*]] = arith.muli %[[I]], %{{.*}} : index
  // CHECK: tfm.arange start = 0 plus %[[OFF]] : tensor<4xi64>
  // CHECK: %[[J:.*]] = shard.process_multi_index on @mesh axes = [0] : index
  // CHECK: %[[OFF2:.*]] = arith.muli %[[J]], %{{.*}} : index
  // CHECK: tfm.arange start = 0 plus %[[OFF2]] : tensor<4xi64>
  func.func @sub_axis_blocks() -> (tensor<8xi64> {tfm.sharding = #tfm.sharding<[["tp:(2)2"]]>},
                                   tensor<8xi64> {tfm.sharding = #tfm.sharding<[["tp:(1)2"]]>}) {
    %p = tfm.arange start = 0 {tfm.shardings = [#tfm.sharding<[["tp:(2)2"]]>]} : tensor<8xi64>
    %q = tfm.arange start = 0 {tfm.shardings = [#tfm.sharding<[["tp:(1)2"]]>]} : tensor<8xi64>
    return %p, %q : tensor<8xi64>, tensor<8xi64>
  }
}

// -----

// A collective over a sub-axis is one over its grid axes: gathering the
// major half of a tp of 4 is an all_gather over grid axis 0 (groups of 2);
// whole tp is both grid axes, major first.
module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  // CHECK: shard.grid @mesh(shape = 2x2) {tfm.grid_axes = ["tp:(1)2", "tp:(2)2"]}
  // CHECK-LABEL: func.func @gather_sub_axis
  // CHECK: shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
  // CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [0, 1] : tensor<8x8xf32> -> tensor<8x8xf32>
  func.func @gather_sub_axis(%x: tensor<8x4xf32> {tfm.sharding = #tfm.sharding<[["tp:(1)2"], []]>},
                             %w: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>})
      -> (tensor<8x4xf32>, tensor<8x8xf32>) {
    %y = tfm.gelu %x tanh {tfm.shardings = [#tfm.sharding<[[], []]>]} : tensor<8x4xf32>
    %z = tfm.matmul %y, %w {tfm.shardings = [#tfm.sharding<[[], []], pending = ["tp"]>]} : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    return %y, %z : tensor<8x4xf32>, tensor<8x8xf32>
  }
}

// -----

// A part no sharding names: two kv heads held whole on every rank, the
// queries' heads split over a tp of 4. Attention wants each kv head on the
// two ranks of its query group (the major half of tp), which only the
// partitioning finds; it partitions again on a grid cut for it and slices
// the kv heads over grid axis 0, with no communication.
module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  // CHECK: shard.grid @mesh(shape = 2x2) {tfm.grid_axes = ["tp:(1)2", "tp:(2)2"]}
  // CHECK-LABEL: func.func @kv_heads_sliced
  // CHECK: shard.all_slice %arg1 on @mesh grid_axes = [0] slice_axis = 1 : tensor<1x2x4x2xf32> -> tensor<1x1x4x2xf32>
  // CHECK: shard.all_slice %arg2 on @mesh grid_axes = [0] slice_axis = 1 : tensor<1x2x4x2xf32> -> tensor<1x1x4x2xf32>
  // CHECK: tfm.attention {{.*}} : tensor<1x2x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32> -> tensor<1x2x4x2xf32>
  func.func @kv_heads_sliced(%q: tensor<1x8x4x2xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"], [], []]>},
                             %k: tensor<1x2x4x2xf32> {tfm.sharding = #tfm.sharding<[[], [], [], []]>},
                             %v: tensor<1x2x4x2xf32> {tfm.sharding = #tfm.sharding<[[], [], [], []]>})
      -> (tensor<1x8x4x2xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"], [], []]>}) {
    %o = tfm.attention %q, %k, %v causal scale = 0.5 {tfm.shardings = [#tfm.sharding<[[], ["tp"], [], []]>]} : tensor<1x8x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x8x4x2xf32>
    return %o : tensor<1x8x4x2xf32>
  }
}

// -----

// Two sub-axes that end inside each other have no grid of parts.
// expected-error @+1 {{partitioning needs a grid for the sub-axes of its shardings: the sub-axes 'tp:(1)2' and 'tp:(1)3' end inside each other, so no grid of parts holds both}}
module attributes {tfm.mesh = #tfm.mesh<tp = 12>} {
  func.func @nest_not(%x: tensor<12xf32> {tfm.sharding = #tfm.sharding<[["tp:(1)2"]]>},
                      %y: tensor<12xf32> {tfm.sharding = #tfm.sharding<[["tp:(1)3"]]>}) -> (tensor<12xf32>, tensor<12xf32>) {
    return %x, %y : tensor<12xf32>, tensor<12xf32>
  }
}

// -----

// A fused weight's parts, each split, cannot become one contiguous split of
// the whole dimension: a rank would need columns of both parts.
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @parts_to_contiguous(%x: tensor<8x4xf32> {tfm.sharding = #tfm.sharding<[["tp"], []], parts = [2, 1]>}) -> tensor<8x4xf32> {
    // expected-error @+1 {{'tfm.gelu' op cannot reshard an operand from #tfm.sharding<[["tp"], []], parts = [2, 1]> to #tfm.sharding<[["tp"], []]>: dimension 0 would change from 2 parts to 1 while split}}
    %y = tfm.gelu %x tanh {tfm.shardings = [#tfm.sharding<[["tp"], []]>]} : tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}

// -----

// A contraction over a padded dimension needs zeros in one operand's
// padding; a softmax over padded rows leaves other values there.
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @dirty_padding(%x: tensor<5x4xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>},
                           %y: tensor<5x3xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>}) -> tensor<4x3xf32> {
    %s = tfm.softmax %x {tfm.shardings = [#tfm.sharding<[["tp"], []]>]} : tensor<5x4xf32>
    %t = tfm.softmax %y {tfm.shardings = [#tfm.sharding<[["tp"], []]>]} : tensor<5x3xf32>
    // expected-error @+1 {{'tfm.matmul' op contracts a dimension of size 5 split unevenly over 2 devices, but no operand's padding is known to be zeros}}
    %m = tfm.matmul %s, %t transpose_lhs {tfm.shardings = [#tfm.sharding<[[], []], pending = ["tp"]>]} : tensor<5x4xf32>, tensor<5x3xf32> -> tensor<4x3xf32>
    return %m : tensor<4x3xf32>
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

// An op outside the tfm dialect: propagation leaves it bare, so asking for
// propagation again would not help.
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @not_tfm(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], []]>}) -> tensor<4x8xf32> {
    // expected-error @+1 {{'arith.constant' op is no tfm op, so pmlir-sharding-propagation gives it no tfm.shardings and partition cannot place it on the mesh}}
    %c = arith.constant dense<1.0> : tensor<8xf32>
    %y = tfm.add %x, %c {tfm.shardings = [#tfm.sharding<[[], []]>]} : tensor<4x8xf32>, tensor<8xf32>
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
  func.func @too_many_devices(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
    // expected-error @+1 {{'tfm.gelu' op has tfm.shardings entry #tfm.sharding<[["tp"], []]> splitting dimension 0 of 'tensor<3x8xf32>' over 4 devices, more than its size}}
    %y = tfm.gelu %x tanh {tfm.shardings = [#tfm.sharding<[["tp"], []]>]} : tensor<3x8xf32>
    return %y : tensor<3x8xf32>
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

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  // expected-error @+1 {{@bad_arg_axis: argument #0 names mesh axis 'tp:(1)3', which the mesh #tfm.mesh<tp = 4> does not have}}
  func.func @bad_arg_axis(%x: tensor<12xf32> {tfm.sharding = #tfm.sharding<[["tp:(1)3"]]>}) -> tensor<12xf32> {
    return %x : tensor<12xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  func.func @bad_result_axis(%x: tensor<12xf32> {tfm.sharding = #tfm.sharding<[["tp"]]>}) -> (tensor<12xf32> {tfm.sharding = #tfm.sharding<[["pp"]]>}) {
    // expected-error @+1 {{@bad_result_axis: result #0 names mesh axis 'pp', which the mesh #tfm.mesh<tp = 4> does not have}}
    return %x : tensor<12xf32>
  }
}

// -----

// A program in head-tail order over cp (tfm.head_tail_axis): each entry
// argument and result with a dimension split over cp says which one is in
// that order (tfm.head_tail_dim), as part of its layout; a tensor not
// split over cp says nothing.
// CHECK-LABEL: func.func @head_tail_layout
// CHECK-SAME: %{{.*}}: tensor<2x4xi64> {tfm.global_type = tensor<2x8xi64>, tfm.head_tail_dim = 1 : i64, tfm.sharding = #tfm.sharding<{{\[\[}}], ["cp"{{\]\]}}>}
// CHECK-SAME: %{{.*}}: tensor<8x8xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], []]>}
// CHECK-SAME: -> (tensor<2x4x8xf32> {tfm.global_type = tensor<2x8x8xf32>, tfm.head_tail_dim = 1 : i64, tfm.sharding = #tfm.sharding<{{\[\[}}], ["cp"], []]>}, tensor<8x8xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], []]>})
module attributes {tfm.head_tail_axis = "cp", tfm.mesh = #tfm.mesh<cp = 2>} {
  func.func @head_tail_layout(%ids: tensor<2x8xi64> {tfm.sharding = #tfm.sharding<[[], ["cp"]]>},
                              %table: tensor<8x8xf32> {tfm.sharding = #tfm.sharding<[[], []]>})
      -> (tensor<2x8x8xf32> {tfm.sharding = #tfm.sharding<[[], ["cp"], []]>},
          tensor<8x8xf32> {tfm.sharding = #tfm.sharding<[[], []]>}) {
    %x = tfm.embedding %table[%ids] {tfm.shardings = [#tfm.sharding<[[], ["cp"], []]>]} : tensor<8x8xf32>, tensor<2x8xi64> -> tensor<2x8x8xf32>
    return %x, %table : tensor<2x8x8xf32>, tensor<8x8xf32>
  }
}

// -----

// Expert parallelism: tokens and experts split over ep. Each device sorts
// its own tokens, sends each expert's rows to the device holding it (the
// most it can receive: both devices' rows), runs its 3 experts' grouped
// GEMMs and sends the rows back to be combined.
// CHECK-LABEL: func @experts_over_ep
module attributes {tfm.mesh = #tfm.mesh<ep = 2>} {
func.func @experts_over_ep(%x: tensor<4x3x16xf32> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>},
                           %e: tensor<4x3x2xi64> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>},
                           %w: tensor<4x3x2xf32> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>},
                           %w1: tensor<6x13x16xf32> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>},
                           %w3: tensor<6x13x16xf32> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>},
                           %w2: tensor<6x16x13xf32> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>})
    -> (tensor<4x3x16xf32> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>}) {
  // CHECK: %[[SLOTS:.*]], %[[SOURCES:.*]], %[[COUNTS:.*]] = tfm.moe_sort %{{.*}} num_experts = 6 : tensor<2x3x2xi64> -> tensor<2x3x2xi64>, tensor<12xi64>, tensor<6xi64>
  // CHECK: %[[ROWS:.*]] = tfm.moe_dispatch %{{.*}}, %[[SLOTS]], %[[SOURCES]] : tensor<2x3x16xf32>, tensor<2x3x2xi64>, tensor<12xi64> -> tensor<12x16xf32>
  // CHECK: %[[RECV:.*]], %[[MINE:.*]] = tfm.moe_all_to_all %[[ROWS]], %[[COUNTS]] {grid = @mesh, grid_axes = array<i16: 0>} : tensor<12x16xf32>, tensor<6xi64> -> tensor<24x16xf32>, tensor<3xi64>
  // CHECK: tfm.grouped_matmul %[[RECV]], %{{.*}}, %[[MINE]] transpose_rhs : tensor<24x16xf32>, tensor<3x13x16xf32>, tensor<3xi64> -> tensor<24x13xf32>
  // CHECK: %[[DOWN:.*]] = tfm.grouped_matmul %{{.*}}, %{{.*}}, %[[MINE]] transpose_rhs : tensor<24x13xf32>, tensor<3x16x13xf32>, tensor<3xi64> -> tensor<24x16xf32>
  // CHECK: %[[BACK:.*]] = tfm.moe_all_to_all_back %[[DOWN]], %[[COUNTS]] {grid = @mesh, grid_axes = array<i16: 0>} : tensor<24x16xf32>, tensor<6xi64> -> tensor<12x16xf32>
  // CHECK: %[[Y:.*]] = tfm.moe_combine %[[BACK]], %[[SLOTS]], %[[SOURCES]] weights %{{.*}} : tensor<12x16xf32>, tensor<2x3x2xi64>, tensor<12xi64>, tensor<2x3x2xf32> -> tensor<2x3x16xf32>
  // CHECK: return %[[Y]]
  %y = tfm.moe_experts %x, %e, %w, %w1, %w3, %w2 {tfm.shardings = [#tfm.sharding<[["ep"], [], []]>]}
      : tensor<4x3x16xf32>, tensor<4x3x2xi64>, tensor<4x3x2xf32>, tensor<6x13x16xf32>,
        tensor<6x13x16xf32>, tensor<6x16x13xf32> -> tensor<4x3x16xf32>
  return %y : tensor<4x3x16xf32>
}
}

// -----

// The tokens per expert of a batch split over dp and ep: each device
// counts its own tokens' choices, and the step metric, whole on every
// device, takes their sum over both axes.
// CHECK-LABEL: func @expert_counts_summed_for_the_metric
module attributes {tfm.mesh = #tfm.mesh<ep = 2, dp = 2>} {
func.func @expert_counts_summed_for_the_metric(
    %e: tensor<4x3x2xi64> {tfm.sharding = #tfm.sharding<[["dp", "ep"], [], []]>}) {
  // CHECK: %[[LOCAL:.*]] = tfm.moe_expert_counts %{{.*}} num_experts = 6 : tensor<1x3x2xi64> -> tensor<6xi64>
  // CHECK: %[[SUM:.*]] = shard.all_reduce %[[LOCAL]] on @mesh grid_axes = [1, 0] : tensor<6xi64> -> tensor<6xi64>
  // CHECK: tfm.step_metric %[[SUM]] kind = expert_tokens index = 2 : tensor<6xi64>
  %c = tfm.moe_expert_counts %e num_experts = 6 {tfm.shardings = [#tfm.sharding<[[]], pending = ["dp", "ep"]>]}
      : tensor<4x3x2xi64> -> tensor<6xi64>
  tfm.step_metric %c kind = expert_tokens index = 2 : tensor<6xi64>
  return
}
}

// -----

// A capacity holds per sequence: with the batch split over dp and the
// sequence over cp, each device gathers its sequences whole over cp first
// (the rule keeps them whole), zeroes the weights past capacity and counts
// what it dropped, summed over dp.
// CHECK-LABEL: func @capacity_takes_whole_sequences
module attributes {tfm.mesh = #tfm.mesh<cp = 2, dp = 2>} {
func.func @capacity_takes_whole_sequences(
    %w: tensor<4x6x2xf32> {tfm.sharding = #tfm.sharding<[["dp"], ["cp"], []]>},
    %e: tensor<4x6x2xi64> {tfm.sharding = #tfm.sharding<[["dp"], ["cp"], []]>})
    -> (tensor<4x6x2xf32> {tfm.sharding = #tfm.sharding<[["dp"], [], []]>}) {
  // CHECK-DAG: %[[W:.*]] = shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x3x2xf32> -> tensor<2x6x2xf32>
  // CHECK-DAG: %[[E:.*]] = shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x3x2xi64> -> tensor<2x6x2xi64>
  // CHECK: tfm.moe_capacity %[[W]], %[[E]] capacity = 2 num_experts = 3 : tensor<2x6x2xf32>, tensor<2x6x2xi64>
  // CHECK: %[[D:.*]] = tfm.moe_expert_counts %[[E]] num_experts = 3 capacity = 2 : tensor<2x6x2xi64> -> tensor<3xi64>
  // CHECK: shard.all_reduce %[[D]] on @mesh grid_axes = [1] : tensor<3xi64> -> tensor<3xi64>
  %kept = tfm.moe_capacity %w, %e capacity = 2 num_experts = 3 {tfm.shardings = [#tfm.sharding<[["dp"], [], []]>]}
      : tensor<4x6x2xf32>, tensor<4x6x2xi64>
  %d = tfm.moe_expert_counts %e num_experts = 3 capacity = 2 {tfm.shardings = [#tfm.sharding<[[]], pending = ["dp"]>]}
      : tensor<4x6x2xi64> -> tensor<3xi64>
  tfm.step_metric %d kind = dropped_tokens index = 0 : tensor<3xi64>
  return %kept : tensor<4x6x2xf32>
}
}
