// RUN: pmlir-opt %s --pmlir-linalg-to-library-calls | FileCheck %s

#lhs = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#rhs = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>

// CHECK-LABEL: func.func private @pmlir_matmul_f32_r32_t00(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i1) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func @marked_contraction_becomes_a_call
func.func @marked_contraction_becomes_a_call(%a: memref<2x3x16xf32>, %w: memref<16x8xf32, strided<[24, 1], offset: 8>>, %c: memref<2x3x8xf32>) {
  // CHECK: %[[A:.*]] = memref.cast %{{.*}} : memref<2x3x16xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  // CHECK: %[[W:.*]] = memref.cast %{{.*}} : memref<16x8xf32, strided<[24, 1], offset: 8>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  // CHECK: %[[C:.*]] = memref.cast
  // CHECK: %[[ACC:.*]] = arith.constant true
  // CHECK: call @pmlir_matmul_f32_r32_t00(%[[A]], %[[W]], %[[C]], %[[ACC]])
  // CHECK-NOT: linalg.generic
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"], library_call = "pmlir_matmul_f32_r32_t00"}
      ins(%a, %w : memref<2x3x16xf32>, memref<16x8xf32, strided<[24, 1], offset: 8>>) outs(%c : memref<2x3x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// A zero fill of the output right before the call is dropped; the kernel
// overwrites. A fill of another value, or of another buffer, stays.
// CHECK-LABEL: func @zero_fill_becomes_overwrite
func.func @zero_fill_becomes_overwrite(%a: memref<2x3x16xf32>, %w: memref<16x8xf32>, %c: memref<2x3x8xf32>, %d: memref<2x3x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  // CHECK-NOT: linalg.fill
  // CHECK: %[[OVERWRITE:.*]] = arith.constant false
  // CHECK: call @pmlir_matmul_f32_r32_t00({{.*}}, %[[OVERWRITE]])
  linalg.fill ins(%zero : f32) outs(%c : memref<2x3x8xf32>)
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"], library_call = "pmlir_matmul_f32_r32_t00"}
      ins(%a, %w : memref<2x3x16xf32>, memref<16x8xf32>) outs(%c : memref<2x3x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  // CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<2x3x8xf32>)
  // CHECK: %[[ACC1:.*]] = arith.constant true
  // CHECK: call @pmlir_matmul_f32_r32_t00({{.*}}, %[[ACC1]])
  linalg.fill ins(%one : f32) outs(%c : memref<2x3x8xf32>)
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"], library_call = "pmlir_matmul_f32_r32_t00"}
      ins(%a, %w : memref<2x3x16xf32>, memref<16x8xf32>) outs(%c : memref<2x3x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  // CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<2x3x8xf32>)
  // CHECK: %[[ACC2:.*]] = arith.constant true
  // CHECK: call @pmlir_matmul_f32_r32_t00({{.*}}, %[[ACC2]])
  linalg.fill ins(%zero : f32) outs(%d : memref<2x3x8xf32>)
  linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction"], library_call = "pmlir_matmul_f32_r32_t00"}
      ins(%a, %w : memref<2x3x16xf32>, memref<16x8xf32>) outs(%c : memref<2x3x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func @unmarked_ops_stay
func.func @unmarked_ops_stay(%a: memref<4xf32>, %b: memref<4xf32>) {
  // CHECK: linalg.generic
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}
