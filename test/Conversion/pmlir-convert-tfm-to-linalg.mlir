// RUN: pmlir-opt %s --pmlir-convert-tfm-to-linalg --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[LAST:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func @bias_add_broadcasts_the_trailing_dim
func.func @bias_add_broadcasts_the_trailing_dim(%x: tensor<2x8x16xf32>, %b: tensor<16xf32>) -> tensor<2x8x16xf32> {
  // CHECK: linalg.generic {indexing_maps = [#[[ID3]], #[[LAST]], #[[ID3]]], iterator_types = ["parallel", "parallel", "parallel"]}
  // CHECK: arith.addf
  // CHECK-NOT: tfm.
  %0 = tfm.add %x, %b : tensor<2x8x16xf32>, tensor<16xf32>
  return %0 : tensor<2x8x16xf32>
}

// -----

// The [out, in] weight is read as (n, k); the weight is shared by the batch.
// No library call: which contractions run as kernels is the target's choice.
// CHECK-NOT: library_call
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @matmul_transpose_rhs
func.func @matmul_transpose_rhs(%x: tensor<2x3x16xf32>, %w: tensor<8x16xf32>) -> tensor<2x3x8xf32> {
  // CHECK: %[[ZERO:.*]] = linalg.fill
  // CHECK: linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
  // CHECK-SAME: outs(%[[ZERO]]
  %0 = tfm.matmul %x, %w transpose_rhs : tensor<2x3x16xf32>, tensor<8x16xf32> -> tensor<2x3x8xf32>
  return %0 : tensor<2x3x8xf32>
}

// -----

// The two query heads that share a kv head are the rows of one matmul:
// [1, 4, 3, 8] is viewed as [1, 2, 6, 8]. Row r is query r mod 3, which sees
// keys up to (r mod 3) + (Skv - S).
// CHECK-LABEL: func @grouped_query_causal_attention
func.func @grouped_query_causal_attention(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x4xf32>) -> tensor<1x4x3x4xf32> {
  // CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 2, 2, 3, 8]
  // CHECK: %[[Q:.*]] = tensor.collapse_shape %[[E]] {{\[\[}}0], [1], [2, 3], [4]] : tensor<1x2x2x3x8xf32> into tensor<1x2x6x8xf32>
  // CHECK: linalg.generic {{.*}} ins(%[[Q]], %{{.*}} : tensor<1x2x6x8xf32>, tensor<1x2x5x8xf32>)
  // CHECK: %[[ROW:.*]] = linalg.index 2
  // CHECK: %[[S:.*]] = arith.remui %[[ROW]], %c3
  // CHECK: %[[T:.*]] = linalg.index 3
  // CHECK: %[[LAST:.*]] = arith.addi %[[S]], %c2
  // CHECK: arith.cmpi ugt, %[[T]], %[[LAST]]
  // CHECK: arith.maximumf
  // CHECK: math.exp
  // CHECK: arith.addf {{.*}} fastmath<reassoc>
  // CHECK: arith.divf
  // CHECK: %[[O:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x6x4xf32>)
  // CHECK: %[[OE:.*]] = tensor.expand_shape %[[O]] {{\[\[}}0], [1], [2, 3], [4]] output_shape [1, 2, 2, 3, 4]
  // CHECK: tensor.collapse_shape %[[OE]] {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x2x2x3x4xf32> into tensor<1x4x3x4xf32>
  %o = tfm.attention %q, %k, %v causal scale = 0.5 : tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x4xf32> -> tensor<1x4x3x4xf32>
  return %o : tensor<1x4x3x4xf32>
}

// -----

// CHECK-LABEL: func @heads_and_split
func.func @heads_and_split(%x: tensor<2x7x32xf32>, %w: tensor<16x48xf32>) -> (tensor<2x7x32xf32>, tensor<16x16xf32>) {
  // CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] output_shape [2, 7, 4, 8]
  // CHECK: linalg.transpose ins(%{{.*}} : tensor<2x7x4x8xf32>) outs(%{{.*}} : tensor<2x4x7x8xf32>) permutation = [0, 2, 1, 3]
  // CHECK: linalg.transpose ins(%{{.*}} : tensor<2x4x7x8xf32>) outs(%{{.*}} : tensor<2x7x4x8xf32>) permutation = [0, 2, 1, 3]
  // CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<2x7x4x8xf32> into tensor<2x7x32xf32>
  // CHECK: tensor.extract_slice %{{.*}}[0, 16] [16, 16] [1, 1]
  %h = tfm.split_heads %x heads = 4 : tensor<2x7x32xf32> -> tensor<2x4x7x8xf32>
  %m = tfm.merge_heads %h : tensor<2x4x7x8xf32> -> tensor<2x7x32xf32>
  %p:3 = tfm.split %w dim = 1 : tensor<16x48xf32> -> tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
  return %m, %p#1 : tensor<2x7x32xf32>, tensor<16x16xf32>
}

// -----

// CHECK-LABEL: func @layer_is_inlined
func.func @layer_is_inlined(%x: tensor<4x16xf32>, %g: tensor<16xf32>) -> tensor<4x16xf32> {
  // CHECK-NOT: tfm.
  // CHECK: math.rsqrt
  // CHECK: return
  %0 = tfm.layer 0 : tensor<4x16xf32> {
    %n = tfm.rmsnorm %x, %g eps = 1.0e-06 : tensor<4x16xf32>, tensor<16xf32>
    tfm.yield %n : tensor<4x16xf32>
  }
  return %0 : tensor<4x16xf32>
}

// -----

// The CPU lowering needs static shapes and says so.
func.func @dynamic_shapes_are_refused(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'tfm.silu' op has a dynamic dimension in 'tensor<?x16xf32>'; the CPU lowering needs static shapes}}
  %0 = tfm.silu %x : tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// One contraction per expert over its rows: a loop over the counts, each
// count cut to the rows left, the rows' slice [?, K] times the expert's
// [F, K] weight (read transposed) into the result's slice, zeroed first;
// then the rows past the groups zeroed (the rest is not filled twice).
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[WEIGHT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func @grouped_matmul_loops_over_experts
func.func @grouped_matmul_loops_over_experts(%x: tensor<13x16xf32>, %w: tensor<4x7x16xf32>, %c: tensor<4xi64>) -> tensor<13x7xf32> {
  // CHECK: %[[INIT:.*]] = tensor.empty() : tensor<13x7xf32>
  // CHECK-NOT: linalg.fill
  // CHECK: %[[LOOP:.*]]:2 = scf.for %[[E:.*]] = %{{.*}} to %c4 step %c1 iter_args(%[[ACC:.*]] = %[[INIT]], %[[START:.*]] = %{{.*}}) -> (tensor<13x7xf32>, index)
  // CHECK: tensor.extract %{{.*}}[%[[E]]] : tensor<4xi64>
  // CHECK: %[[LEFT:.*]] = arith.subi %{{.*}}, %[[START]]
  // CHECK: %[[COUNT:.*]] = arith.minsi %{{.*}}, %[[LEFT]]
  // CHECK: %[[SLICE:.*]] = tensor.extract_slice %[[ACC]][%[[START]], 0] [%[[COUNT]], 7] [1, 1] : tensor<13x7xf32> to tensor<?x7xf32>
  // CHECK: tensor.extract_slice %{{.*}}[%[[E]], 0, 0] [1, 7, 16] [1, 1, 1] : tensor<4x7x16xf32> to tensor<7x16xf32>
  // CHECK: %[[ZERO:.*]] = linalg.fill {{.*}} outs(%[[SLICE]] : tensor<?x7xf32>)
  // CHECK: %[[PRODUCT:.*]] = linalg.generic {indexing_maps = [#[[ROWS]], #[[WEIGHT]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
  // CHECK-SAME: outs(%[[ZERO]] : tensor<?x7xf32>)
  // CHECK: tensor.insert_slice %[[PRODUCT]] into %[[ACC]][%[[START]], 0] [%[[COUNT]], 7]
  // CHECK: arith.addi %[[START]], %[[COUNT]]
  // CHECK: %[[REST:.*]] = arith.subi %{{.*}}, %[[LOOP]]#1
  // CHECK: %[[TAIL:.*]] = tensor.extract_slice %[[LOOP]]#0[%[[LOOP]]#1, 0] [%[[REST]], 7]
  // CHECK: %[[ZEROS:.*]] = linalg.fill {{.*}} outs(%[[TAIL]] : tensor<?x7xf32>)
  // CHECK: tensor.insert_slice %[[ZEROS]] into %[[LOOP]]#0[%[[LOOP]]#1, 0] [%[[REST]], 7]
  // CHECK-NOT: tfm.
  %0 = tfm.grouped_matmul %x, %w, %c transpose_rhs : tensor<13x16xf32>, tensor<4x7x16xf32>, tensor<4xi64> -> tensor<13x7xf32>
  return %0 : tensor<13x7xf32>
}

// -----

// The sort by expert: the counts and their running starts, then one pass
// over the pairs in order that deals out each expert's next slot.
// CHECK-LABEL: func @moe_sort_deals_slots_in_order
func.func @moe_sort_deals_slots_in_order(%e: tensor<7x2xi64>) -> (tensor<7x2xi64>, tensor<14xi64>, tensor<5xi64>) {
  // CHECK: %[[COUNTS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<14xi64>) outs(%{{.*}} : tensor<5xi64>)
  // CHECK: %[[STARTS:.*]] = linalg.generic {{.*}} ins(%[[COUNTS]] : tensor<5xi64>)
  // CHECK: %[[DEALT:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %c14 step %c1 iter_args(%{{.*}} = %[[STARTS]],
  // CHECK: %[[SLOTS:.*]] = tensor.expand_shape %[[DEALT]]#1 {{\[\[}}0, 1]] output_shape [7, 2]
  // CHECK: return %[[SLOTS]], %[[DEALT]]#2, %[[COUNTS]]
  %s, %src, %c = tfm.moe_sort %e num_experts = 5 : tensor<7x2xi64> -> tensor<7x2xi64>, tensor<14xi64>, tensor<5xi64>
  return %s, %src, %c : tensor<7x2xi64>, tensor<14xi64>, tensor<5xi64>
}

// -----

// The tokens per expert: the counts of the sort alone; the step metric
// that reports them is left for pmlir-lower-shard-to-runtime.
// CHECK-LABEL: func @expert_counts_count_the_choices
func.func @expert_counts_count_the_choices(%e: tensor<7x2xi64>) {
  // CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<7x2xi64> into tensor<14xi64>
  // CHECK: %[[COUNTS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[FLAT]] : tensor<14xi64>) outs(%{{.*}} : tensor<5xi64>)
  // CHECK: tfm.step_metric %[[COUNTS]] kind = expert_tokens index = 0 : tensor<5xi64>
  %c = tfm.moe_expert_counts %e num_experts = 5 : tensor<7x2xi64> -> tensor<5xi64>
  tfm.step_metric %c kind = expert_tokens index = 0 : tensor<5xi64>
  return
}

// -----

// A capacity: one pass over the choices in order, counting each
// sequence's places of each expert ([sequences x experts] of them); the
// weights of the choices past it zeroed, and their count per expert.
// CHECK-LABEL: func @capacity_counts_places_in_order
func.func @capacity_counts_places_in_order(%w: tensor<2x7x2xf32>, %e: tensor<2x7x2xi64>) -> (tensor<2x7x2xf32>, tensor<5xi64>) {
  // CHECK: %[[PASS:.*]]:3 = scf.for %[[I:.*]] = %{{.*}} to %c28 step %c1 iter_args(%[[PLACES:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (tensor<10xi64>, tensor<28xi64>, tensor<5xi64>)
  // CHECK: arith.divui %[[I]], %c14
  // CHECK: arith.cmpi sge, %{{.*}}, %c3_i64
  // CHECK: %[[DROPPED:.*]] = tensor.expand_shape %[[PASS]]#1 {{\[\[}}0, 1, 2]] output_shape [2, 7, 2] : tensor<28xi64> into tensor<2x7x2xi64>
  // CHECK: %[[KEPT:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[DROPPED]] : tensor<2x7x2xf32>, tensor<2x7x2xi64>)
  // CHECK: arith.select %{{.*}}, %{{.*}}, %cst
  // CHECK: scf.for
  // CHECK: return %[[KEPT]], %{{.*}}#2
  %kept = tfm.moe_capacity %w, %e capacity = 3 num_experts = 5 : tensor<2x7x2xf32>, tensor<2x7x2xi64>
  %dropped = tfm.moe_expert_counts %e num_experts = 5 capacity = 3 : tensor<2x7x2xi64> -> tensor<5xi64>
  return %kept, %dropped : tensor<2x7x2xf32>, tensor<5xi64>
}

// -----

// A capacity on a sequence stored in head-tail order (ranks 2, length 8:
// positions 0, 1, 6, 7, then 2, 3, 4, 5): the pass takes the choices in
// sequence order, mapping each token's position to the index it is stored
// at (a head chunk's below 2 x 2 positions, a tail chunk's above) before
// it reads its choice.
// CHECK-LABEL: func @capacity_in_head_tail_order
func.func @capacity_in_head_tail_order(%w: tensor<1x8x2xf32>, %e: tensor<1x8x2xi64>) -> tensor<1x8x2xf32> {
  // CHECK: scf.for %[[I:.*]] = %{{.*}} to %c16 step %c1
  // CHECK: %[[P:.*]] = arith.divui %{{.*}}, %c2
  // CHECK: arith.cmpi ult, %[[P]], %c4
  // CHECK: arith.select
  // CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<16xi64>
  %kept = tfm.moe_capacity %w, %e capacity = 3 num_experts = 5 head_tail <ranks = 2, length = 8>
      : tensor<1x8x2xf32>, tensor<1x8x2xi64>
  return %kept : tensor<1x8x2xf32>
}

// -----

// A whole block of experts lowers as the ops it is made of: the sort,
// dispatch, three grouped matmuls (each a loop over the experts) and the
// weighted combine; nothing of tfm is left.
// CHECK-LABEL: func @experts_lower_as_their_ops
func.func @experts_lower_as_their_ops(%x: tensor<2x3x16xf32>, %e: tensor<2x3x2xi64>, %w: tensor<2x3x2xf32>,
                                      %w1: tensor<4x7x16xf32>, %w3: tensor<4x7x16xf32>,
                                      %w2: tensor<4x16x7xf32>) -> tensor<2x3x16xf32> {
  // CHECK: scf.for %{{.*}} = %{{.*}} to %c12 step %c1
  // CHECK-COUNT-3: scf.for %{{.*}} = %{{.*}} to %c4{{.*}} step %c1{{.*}} iter_args
  // CHECK-NOT: tfm.
  %y = tfm.moe_experts %x, %e, %w, %w1, %w3, %w2
      : tensor<2x3x16xf32>, tensor<2x3x2xi64>, tensor<2x3x2xf32>, tensor<4x7x16xf32>,
        tensor<4x7x16xf32>, tensor<4x16x7xf32> -> tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}

// -----

// The loss's gradient takes the forward's row max and exp sum: the logits
// are read once for the max and once for the sum, not again in the
// backward. Only the gradient's own loop (exp, label test) reads them
// after.
// CHECK-LABEL: func @cross_entropy_grad_takes_the_forward_max_and_sum
func.func @cross_entropy_grad_takes_the_forward_max_and_sum(%logits: tensor<2x7x97xf32>, %labels: tensor<2x7xi64>) -> (tensor<f32>, tensor<2x7x97xf32>) {
  // CHECK: arith.maximumf
  // CHECK-NOT: arith.maximumf
  // CHECK: math.exp
  // CHECK: math.log
  // CHECK: math.exp
  // CHECK-NOT: math.exp
  // CHECK-NOT: arith.maximumf
  // CHECK: return
  %loss = tfm.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x7xi64> -> tensor<f32>
  %one = tfm.fill 1.000000e+00 : tensor<f32>
  %n = tfm.count_tokens %labels ignore_index = -100 : tensor<2x7xi64> -> tensor<f32>
  %dl = tfm.cross_entropy_grad %logits, %labels, %one, %n ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x7xi64>, tensor<f32>, tensor<f32>
  return %loss, %dl : tensor<f32>, tensor<2x7x97xf32>
}

// -----

// A gradient of other labels (or without its forward) finds its own max
// and sum.
// CHECK-LABEL: func @cross_entropy_grad_of_other_labels_finds_its_own
func.func @cross_entropy_grad_of_other_labels_finds_its_own(%logits: tensor<2x7x97xf32>, %labels: tensor<2x7xi64>, %other: tensor<2x7xi64>) -> (tensor<f32>, tensor<2x7x97xf32>) {
  // CHECK: arith.maximumf
  // CHECK: math.log
  // CHECK: arith.maximumf
  // CHECK: math.exp
  // CHECK: math.exp
  // CHECK: return
  %loss = tfm.cross_entropy %logits, %labels ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x7xi64> -> tensor<f32>
  %one = tfm.fill 1.000000e+00 : tensor<f32>
  %n = tfm.count_tokens %other ignore_index = -100 : tensor<2x7xi64> -> tensor<f32>
  %dl = tfm.cross_entropy_grad %logits, %other, %one, %n ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x7xi64>, tensor<f32>, tensor<f32>
  return %loss, %dl : tensor<f32>, tensor<2x7x97xf32>
}

// -----

// A tied table's gradient: the embedding's rows are added into the LM
// head's gradient, the loop's initial table, with no zeroed table and no
// table-sized sum after.
// CHECK-LABEL: func @tied_embedding_grad_adds_into_the_other_gradient
// CHECK-SAME: %[[HEAD:[a-z0-9]+]]: tensor<97x16xf32>
func.func @tied_embedding_grad_adds_into_the_other_gradient(%head: tensor<97x16xf32>, %dy: tensor<2x7x16xf32>, %ids: tensor<2x7xi64>) -> tensor<97x16xf32> {
  // CHECK-NOT: linalg.fill
  // CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[HEAD]]) -> (tensor<97x16xf32>)
  // CHECK: arith.addf
  // CHECK: scf.yield
  // CHECK-NOT: arith.addf
  // CHECK: return %[[SUM]]
  %e = tfm.embedding_grad %dy[%ids] : tensor<2x7x16xf32>, tensor<2x7xi64> -> tensor<97x16xf32>
  %g = tfm.add %head, %e : tensor<97x16xf32>, tensor<97x16xf32>
  return %g : tensor<97x16xf32>
}

// -----

// An embedding gradient used elsewhere too is its own zeroed table.
// CHECK-LABEL: func @embedding_grad_with_other_uses_is_its_own_table
func.func @embedding_grad_with_other_uses_is_its_own_table(%head: tensor<97x16xf32>, %dy: tensor<2x7x16xf32>, %ids: tensor<2x7xi64>) -> (tensor<97x16xf32>, tensor<97x16xf32>) {
  // CHECK: %[[ZERO:.*]] = linalg.fill
  // CHECK: %[[E:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]])
  // CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[E]] :
  // CHECK: arith.addf
  %e = tfm.embedding_grad %dy[%ids] : tensor<2x7x16xf32>, tensor<2x7xi64> -> tensor<97x16xf32>
  %g = tfm.add %head, %e : tensor<97x16xf32>, tensor<97x16xf32>
  return %g, %e : tensor<97x16xf32>, tensor<97x16xf32>
}

// -----

// A gradient's sum of squares in two stages: per row (a loop the runtime's
// threads split by rows), then over the rows; the order of the sums
// depends on the shape only. A vector is summed in one.
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ID1:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[ALL:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func @sum_squares_by_rows_then_over_them
func.func @sum_squares_by_rows_then_over_them(%w: tensor<6x5xf32>, %b: tensor<5xf32>) -> (tensor<f32>, tensor<f32>) {
  // CHECK: %[[ROWS:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<6x5xf32>) outs(%{{.*}} : tensor<6xf32>)
  // CHECK: arith.mulf
  // CHECK: linalg.generic {indexing_maps = [#[[ID1]], #[[ALL]]], iterator_types = ["reduction"]} ins(%[[ROWS]] : tensor<6xf32>)
  // CHECK-NOT: arith.mulf
  // CHECK: linalg.generic {indexing_maps = [#[[ID1]], #[[ALL]]], iterator_types = ["reduction"]} ins(%{{.*}} : tensor<5xf32>)
  // CHECK: arith.mulf
  %0 = tfm.sum_squares %w : tensor<6x5xf32> -> tensor<f32>
  %1 = tfm.sum_squares %b : tensor<5xf32> -> tensor<f32>
  return %0, %1 : tensor<f32>, tensor<f32>
}
