// RUN: pmlir-opt %s --pmlir-lower-shard-to-runtime --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-DAG: memref.global "private" constant @pmlir_grid_axes_1_0 : memref<2xi64> = dense<[1, 0]>
// CHECK-DAG: memref.global "private" constant @pmlir_grid_axes_0 : memref<1xi64> = dense<0>
// CHECK-NOT: shard.grid
// CHECK-LABEL: func @all_reduce_calls_the_runtime
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<i64>)
shard.grid @mesh(shape = 2x2)
func.func @all_reduce_calls_the_runtime(%x: tensor<4x8xf32>, %y: tensor<i64>) -> (tensor<4x8xf32>, tensor<i64>) {
  // CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1]] : tensor<4x8xf32> into tensor<32xf32>
  // CHECK: %[[IN:.*]] = bufferization.to_buffer %[[FLAT]] read_only : tensor<32xf32> to memref<32xf32>
  // CHECK: %[[IND:.*]] = memref.cast %[[IN]] : memref<32xf32> to memref<?xf32>
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<32xf32>
  // CHECK: %[[SUM:.*]] = arith.constant 0 : i32
  // CHECK: %[[OUTD:.*]] = memref.cast %[[OUT]]
  // CHECK: %[[AXES:.*]] = memref.get_global @pmlir_grid_axes_1_0 : memref<2xi64>
  // CHECK: %[[AXESD:.*]] = memref.cast %[[AXES]] : memref<2xi64> to memref<?xi64>
  // CHECK: call @pmlir_rt_all_reduce_f32(%[[IND]], %[[OUTD]], %[[AXESD]], %[[SUM]])
  // CHECK: %[[T:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
  // CHECK: %[[R:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0, 1]] output_shape [4, 8]
  %r = shard.all_reduce %x on @mesh grid_axes = [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  // A rank-0 tensor goes through a one-element buffer; max is code 1.
  // CHECK: tensor.expand_shape %[[Y]] [] output_shape [1] : tensor<i64> into tensor<1xi64>
  // CHECK: %[[MAX:.*]] = arith.constant 1 : i32
  // CHECK: call @pmlir_rt_all_reduce_i64({{.*}}, %[[MAX]])
  // CHECK: %[[S:.*]] = tensor.collapse_shape %{{.*}} [] : tensor<1xi64> into tensor<i64>
  %s = shard.all_reduce %y on @mesh grid_axes = [0] reduction = max : tensor<i64> -> tensor<i64>
  // CHECK: return %[[R]], %[[S]]
  return %r, %s : tensor<4x8xf32>, tensor<i64>
}
// CHECK: func.func private @pmlir_rt_all_reduce_f32(memref<?xf32>, memref<?xf32>, memref<?xi64>, i32) attributes {llvm.emit_c_interface}

// -----

shard.grid @mesh(shape = 2)
func.func @unsupported_reduction(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'shard.all_reduce' op reduction 'average' is not lowered (sum, max, min and product are)}}
  %r = shard.all_reduce %x on @mesh grid_axes = [0] reduction = average : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2)
func.func @converting_element_type(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'shard.all_reduce' op is lowered for f32, f64, i32, i64, bf16 and f16 with the same input and result element type, got 'tensor<4xf32>' -> 'tensor<4xf64>'}}
  %r = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf64>
  return %r : tensor<4xf64>
}

// -----

shard.grid @mesh(shape = 2)
func.func @other_ops_are_refused(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'shard.shift' op is not lowered to the runtime (all_reduce, all_gather, reduce_scatter, all_to_all, all_slice, broadcast, send, recv, process_linear_index, process_multi_index and grid_shape are)}}
  %r = shard.shift %x on @mesh grid_axes = [0] shift_axis = 0 offset = 1 rotate : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// all_gather along dim 1: the runtime stacks the group's blocks as
// [n, 2, 3]; the group dim moves next to dim 1 and merges with it.
// CHECK-LABEL: func @all_gather_along_an_inner_dim
shard.grid @mesh(shape = 2x4)
func.func @all_gather_along_an_inner_dim(%x: tensor<2x3xf32>) -> tensor<2x12xf32> {
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<24xf32>
  // CHECK: call @pmlir_rt_all_gather_f32(%{{.*}}, %{{.*}}, %{{.*}})
  // CHECK: %[[T:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
  // CHECK: %[[S:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0, 1, 2]] output_shape [4, 2, 3]
  // CHECK: %[[P:.*]] = linalg.transpose ins(%[[S]] : tensor<4x2x3xf32>) outs(%{{.*}} : tensor<2x4x3xf32>) permutation = [1, 0, 2]
  // CHECK: tensor.collapse_shape %[[P]] {{\[\[}}0], [1, 2]] : tensor<2x4x3xf32> into tensor<2x12xf32>
  %g = shard.all_gather %x on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x3xf32> -> tensor<2x12xf32>
  return %g : tensor<2x12xf32>
}

// -----

// reduce_scatter along dim 1: the n blocks of dim 1 come to the front so
// that each is contiguous.
// CHECK-LABEL: func @reduce_scatter_along_an_inner_dim
shard.grid @mesh(shape = 2)
func.func @reduce_scatter_along_an_inner_dim(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
  // CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [3, 2, 2]
  // CHECK: %[[P:.*]] = linalg.transpose ins(%[[E]] : tensor<3x2x2xf32>) outs(%{{.*}} : tensor<2x3x2xf32>) permutation = [1, 0, 2]
  // CHECK: tensor.collapse_shape %[[P]]
  // CHECK: memref.alloc() : memref<6xf32>
  // CHECK: call @pmlir_rt_reduce_scatter_f32
  %r = shard.reduce_scatter %x on @mesh grid_axes = [0] scatter_axis = 1 : tensor<3x4xf32> -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func @process_indices
shard.grid @mesh(shape = 2x4)
func.func @process_indices() -> (index, index, index) {
  // CHECK: %[[AXES:.*]] = memref.get_global @pmlir_grid_axes_0_1
  // CHECK: %[[L:.*]] = call @pmlir_rt_index_in_group(%{{.*}}) : (memref<?xi64>) -> i64
  // CHECK: %[[LI:.*]] = arith.index_cast %[[L]] : i64 to index
  // CHECK: %[[A1:.*]] = arith.constant 1 : i64
  // CHECK: %[[C1:.*]] = call @pmlir_rt_coordinate(%[[A1]]) : (i64) -> i64
  // CHECK: %[[A0:.*]] = arith.constant 0 : i64
  // CHECK: %[[C0:.*]] = call @pmlir_rt_coordinate(%[[A0]]) : (i64) -> i64
  %l = shard.process_linear_index on @mesh : index
  %m:2 = shard.process_multi_index on @mesh axes = [1, 0] : index, index
  return %l, %m#0, %m#1 : index, index, index
}
// CHECK: func.func private @pmlir_rt_coordinate(i64) -> i64
// CHECK-NOT: emit_c_interface

// -----

// all_to_all: the 2 blocks of split dim 1 go to the front, the runtime
// exchanges them, and the received [2, 4, 3] stack merges into dim 0.
// CHECK-LABEL: func @all_to_all_splits_and_concats
shard.grid @mesh(shape = 2x2)
func.func @all_to_all_splits_and_concats(%x: tensor<4x6xf32>) -> tensor<8x3xf32> {
  // CHECK: %[[E:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [4, 2, 3]
  // CHECK: %[[P:.*]] = linalg.transpose ins(%[[E]] : tensor<4x2x3xf32>) outs(%{{.*}} : tensor<2x4x3xf32>) permutation = [1, 0, 2]
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<24xf32>
  // CHECK: %[[AXES:.*]] = memref.get_global @pmlir_grid_axes_1
  // CHECK: call @pmlir_rt_all_to_all_f32(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xf32>, memref<?xf32>, memref<?xi64>) -> ()
  // CHECK: %[[T:.*]] = bufferization.to_tensor %[[OUT]]
  // CHECK: %[[S:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0, 1, 2]] output_shape [2, 4, 3]
  // CHECK: tensor.collapse_shape %[[S]] {{\[\[}}0, 1], [2]] : tensor<2x4x3xf32> into tensor<8x3xf32>
  %r = shard.all_to_all %x on @mesh grid_axes = [1] split_axis = 1 concat_axis = 0 : tensor<4x6xf32> -> tensor<8x3xf32>
  return %r : tensor<8x3xf32>
}

// -----

// all_slice: this process's block, at its index in the group times the
// block size; no communication.
// CHECK-LABEL: func @all_slice_takes_the_own_block
shard.grid @mesh(shape = 2x4)
func.func @all_slice_takes_the_own_block(%x: tensor<3x8xf32>) -> tensor<3x2xf32> {
  // CHECK: %[[I:.*]] = call @pmlir_rt_index_in_group(%{{.*}}) : (memref<?xi64>) -> i64
  // CHECK: %[[II:.*]] = arith.index_cast %[[I]] : i64 to index
  // CHECK: %[[B:.*]] = arith.constant 2 : index
  // CHECK: %[[OFF:.*]] = arith.muli %[[II]], %[[B]] : index
  // CHECK: tensor.extract_slice %{{.*}}[0, %[[OFF]]] [3, 2] [1, 1] : tensor<3x8xf32> to tensor<3x2xf32>
  // CHECK-NOT: call
  %r = shard.all_slice %x on @mesh grid_axes = [1] slice_axis = 1 : tensor<3x8xf32> -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

// -----

// broadcast, send and recv: the in-group multi-index becomes a linear
// index, the last grid axis fastest (root [1, 2] over axes [0, 1] of a 2x4
// grid is member 1 * 4 + 2); send returns its input.
// CHECK-LABEL: func @point_to_point_and_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<4xf64>, %[[P:.*]]: index)
shard.grid @mesh(shape = 2x4)
func.func @point_to_point_and_broadcast(%x: tensor<4xf64>, %p: index) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) {
  // CHECK: %[[ROOT64:.*]] = arith.constant 6 : i64
  // CHECK: call @pmlir_rt_broadcast_f64(%{{.*}}, %{{.*}}, %{{.*}}, %[[ROOT64]]) : (memref<?xf64>, memref<?xf64>, memref<?xi64>, i64) -> ()
  %b = shard.broadcast %x on @mesh grid_axes = [0, 1] root = [1, 2] : (tensor<4xf64>) -> tensor<4xf64>
  // A dynamic destination is used as given.
  // CHECK: %[[ONE:.*]] = arith.constant 1 : index
  // CHECK: %[[M:.*]] = arith.muli %[[P]], %[[ONE]] : index
  // CHECK: %[[ZERO:.*]] = arith.constant 0 : index
  // CHECK: %[[D:.*]] = arith.addi %[[M]], %[[ZERO]] : index
  // CHECK: %[[D64:.*]] = arith.index_cast %[[D]] : index to i64
  // CHECK: %[[TAG:.*]] = arith.constant 0 : i64
  // CHECK: call @pmlir_rt_send_f64(%{{.*}}, %{{.*}}, %[[D64]], %[[TAG]]) : (memref<?xf64>, memref<?xi64>, i64, i64) -> ()
  %s = shard.send %x on @mesh grid_axes = [1] destination = [%p] : (tensor<4xf64>, index) -> tensor<4xf64>
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<4xf64>
  // CHECK: call @pmlir_rt_recv_f64(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xf64>, memref<?xi64>, i64, i64) -> ()
  // CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]]
  %r = shard.recv %x on @mesh grid_axes = [1] source = [3] : (tensor<4xf64>) -> tensor<4xf64>
  // CHECK: return %{{.*}}, %[[X]], %[[R]]
  return %b, %s, %r : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}

// -----

// grid_shape: constants of the static grid.
// CHECK-LABEL: func @grid_shape_is_constant
shard.grid @mesh(shape = 2x4)
func.func @grid_shape_is_constant() -> (index, index) {
  // CHECK: %[[A:.*]] = arith.constant 4 : index
  // CHECK: %[[B:.*]] = arith.constant 2 : index
  // CHECK: return %[[A]], %[[B]]
  %s:2 = shard.grid_shape @mesh axes = [1, 0] : index, index
  return %s#0, %s#1 : index, index
}

// -----

shard.grid @mesh(shape = 2x4)
func.func @recv_from_anyone(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'shard.recv' op needs a source: receiving from any member is not lowered}}
  %r = shard.recv %x on @mesh grid_axes = [0] : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 3)
func.func @uneven_split(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'shard.all_to_all' op split_axis 0 of 'tensor<4x2xf32>' does not split into the group's 3 blocks}}
  %r = shard.all_to_all %x on @mesh grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<4x2xf32> -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

// A grid of sub-axes: grid axis i is the part of the mesh its
// tfm.grid_axes names, passed to the runtime as its code (SubAxis::code:
// axis | pre << 16 | size << 37). dp stays its index; the halves of tp
// (axis 1) are 1 | 1 << 16 | 2 << 37 and 1 | 2 << 16 | 2 << 37.
// CHECK-DAG: memref.global "private" constant @pmlir_grid_axes_274878038017 : memref<1xi64> = dense<274878038017>
// CHECK-DAG: memref.global "private" constant @pmlir_grid_axes_0_274877972481_274878038017 : memref<3xi64> = dense<[0, 274877972481, 274878038017]>
// CHECK-LABEL: func @sub_axis_codes
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4>} {
  shard.grid @mesh(shape = 2x2x2) {tfm.grid_axes = ["dp", "tp:(1)2", "tp:(2)2"]}
  func.func @sub_axis_codes(%x: tensor<4xf32>) -> (tensor<8xf32>, index, index) {
    // CHECK: memref.get_global @pmlir_grid_axes_274878038017
    // CHECK: call @pmlir_rt_all_gather_f32
    // CHECK: memref.get_global @pmlir_grid_axes_0_274877972481_274878038017
    // CHECK: call @pmlir_rt_index_in_group
    // CHECK: %[[A:.*]] = arith.constant 274877972481 : i64
    // CHECK: call @pmlir_rt_coordinate(%[[A]])
    %g = shard.all_gather %x on @mesh grid_axes = [2] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
    %l = shard.process_linear_index on @mesh : index
    %m = shard.process_multi_index on @mesh axes = [1] : index
    return %g, %l, %m : tensor<8xf32>, index, index
  }
}

// -----

// expected-error @+1 {{'shard.grid' op lists its axes as parts of the mesh (tfm.grid_axes), but the module has no tfm.mesh}}
shard.grid @mesh(shape = 2x2) {tfm.grid_axes = ["tp:(1)2", "tp:(2)2"]}
func.func @parts_without_a_mesh(%x: tensor<4xf32>) -> tensor<8xf32> {
  %g = shard.all_gather %x on @mesh grid_axes = [1] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
  return %g : tensor<8xf32>
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  // expected-error @+1 {{'shard.grid' op has tfm.grid_axes ["tp:(2)2", "tp:(1)2"], which are not the axes of #tfm.mesh<tp = 4> cut into parts, major parts first}}
  shard.grid @mesh(shape = 2x2) {tfm.grid_axes = ["tp:(2)2", "tp:(1)2"]}
  func.func @parts_out_of_order(%x: tensor<4xf32>) -> tensor<8xf32> {
    %g = shard.all_gather %x on @mesh grid_axes = [1] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
    return %g : tensor<8xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  // expected-error @+1 {{'shard.grid' op has tfm.grid_axes entry "tp:(1)3", which names no axis or sub-axis of #tfm.mesh<tp = 4>}}
  shard.grid @mesh(shape = 3) {tfm.grid_axes = ["tp:(1)3"]}
  func.func @part_not_of_the_mesh(%x: tensor<4xf32>) -> tensor<12xf32> {
    %g = shard.all_gather %x on @mesh grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<12xf32>
    return %g : tensor<12xf32>
  }
}

// -----

// A pipeline fragment's work, marked for the trace: the runtime's
// trace_begin and trace_end with the work's code (W is 3), stage and
// microbatch.
// CHECK-LABEL: func.func @work_marks_call_the_tracer
// CHECK-DAG: %[[W:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[STAGE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[MB:.*]] = arith.constant 2 : i64
// CHECK: call @pmlir_rt_trace_begin(%[[W]], %[[STAGE]], %[[MB]]) : (i64, i64, i64) -> ()
// CHECK: tfm.add
// CHECK: call @pmlir_rt_trace_end(
// CHECK: func.func private @pmlir_rt_trace_begin(i64, i64, i64)
func.func @work_marks_call_the_tracer(%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.work_begin stage 1 "W" microbatch 2
  %y = tfm.add %x, %x : tensor<4xf32>, tensor<4xf32>
  pipe.work_end stage 1 "W" microbatch 2
  return %y : tensor<4xf32>
}

// -----

func.func @unknown_work(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'pipe.work_begin' op has kind "RECV_B"; a fragment is F (forward), B (backward), I (input gradient) or W (weight gradient)}}
  pipe.work_begin stage 1 "RECV_B" microbatch 2
  return %x : tensor<4xf32>
}

// -----

// A step metric: the runtime's step_metric with the metric's code
// (expert_tokens is 0), its index and the counts as a buffer.
// CHECK-LABEL: func.func @step_metric_calls_the_runtime
// CHECK-DAG: %[[KIND:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[INDEX:.*]] = arith.constant 5 : i64
// CHECK: %[[BUFFER:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<6xi64> to memref<6xi64>
// CHECK: %[[FLAT:.*]] = memref.cast %[[BUFFER]] : memref<6xi64> to memref<?xi64>
// CHECK: call @pmlir_rt_step_metric(%[[KIND]], %[[INDEX]], %[[FLAT]]) : (i64, i64, memref<?xi64>) -> ()
// CHECK-NOT: tfm.step_metric
// CHECK: func.func private @pmlir_rt_step_metric(i64, i64, memref<?xi64>) attributes {llvm.emit_c_interface}
func.func @step_metric_calls_the_runtime(%counts: tensor<6xi64>) {
  tfm.step_metric %counts kind = expert_tokens index = 5 : tensor<6xi64>
  return
}

// -----

// Expert parallelism's exchanges: the rows and the counts as buffers, the
// runtime writing the received rows and this device's experts' counts.
// CHECK-LABEL: func @expert_exchanges
shard.grid @mesh(shape = 2)
func.func @expert_exchanges(%rows: tensor<12x16xf32>, %counts: tensor<6xi64>) -> (tensor<12x16xf32>, tensor<3xi64>) {
  // CHECK: %[[RECV:.*]] = memref.alloc() : memref<384xf32>
  // CHECK: %[[MINE:.*]] = memref.alloc() : memref<3xi64>
  // CHECK: call @pmlir_rt_moe_all_to_all_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xf32>, memref<?xf32>, memref<?xi64>, memref<?xi64>, memref<?xi64>) -> ()
  // CHECK: call @pmlir_rt_moe_all_to_all_back_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xf32>, memref<?xf32>, memref<?xi64>, memref<?xi64>) -> ()
  // CHECK-NOT: tfm.moe_all_to_all
  %recv, %n = tfm.moe_all_to_all %rows, %counts {grid = @mesh, grid_axes = array<i16: 0>}
      : tensor<12x16xf32>, tensor<6xi64> -> tensor<24x16xf32>, tensor<3xi64>
  %back = tfm.moe_all_to_all_back %recv, %counts {grid = @mesh, grid_axes = array<i16: 0>}
      : tensor<24x16xf32>, tensor<6xi64> -> tensor<12x16xf32>
  return %back, %n : tensor<12x16xf32>, tensor<3xi64>
}
