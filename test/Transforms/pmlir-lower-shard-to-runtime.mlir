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
  // CHECK: %[[OUT:.*]] = memref.alloc() : memref<32xf32>
  // CHECK: %[[AXES:.*]] = memref.get_global @pmlir_grid_axes_1_0 : memref<2xi64>
  // CHECK: %[[AXESD:.*]] = memref.cast %[[AXES]] : memref<2xi64> to memref<?xi64>
  // CHECK: %[[SUM:.*]] = arith.constant 0 : i32
  // CHECK: %[[IND:.*]] = memref.cast %[[IN]]
  // CHECK: %[[OUTD:.*]] = memref.cast %[[OUT]]
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
  // expected-error @+1 {{'shard.all_reduce' op is lowered for f32, f64, i32 and i64 with the same input and result element type, got 'tensor<4xf32>' -> 'tensor<4xf64>'}}
  %r = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf64>
  return %r : tensor<4xf64>
}

// -----

shard.grid @mesh(shape = 2)
func.func @other_collectives_are_refused(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'shard.all_gather' op is not lowered to the runtime yet (shard.all_reduce is)}}
  %r = shard.all_gather %x on @mesh grid_axes = [0] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}
