// RUN: pmlir-opt %s --pmlir-lower-reductions-to-loops --split-input-file | FileCheck %s

// Two row sums (a layer norm's backward): each output element is loaded
// once, carried through the reduction loop, stored once.
// CHECK-LABEL: func.func @two_row_sums
// CHECK-SAME: (%[[X:.*]]: memref<4x8xf32>, %[[W:.*]]: memref<8xf32>, %[[S:.*]]: memref<4xf32>, %[[Q:.*]]: memref<4xf32>)
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-DAG: %[[S0:.*]] = memref.load %[[S]][%[[I]]]
// CHECK-DAG: %[[Q0:.*]] = memref.load %[[Q]][%[[I]]]
// CHECK: %[[R:.*]]:2 = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[SA:.*]] = %[[S0]], %[[QA:.*]] = %[[Q0]]) -> (f32, f32)
// CHECK-DAG: %[[XV:.*]] = memref.load %[[X]][%[[I]], %[[K]]]
// CHECK-DAG: %[[WV:.*]] = memref.load %[[W]][%[[K]]]
// CHECK: %[[P:.*]] = arith.mulf %[[XV]], %[[WV]]
// CHECK: %[[S1:.*]] = arith.addf %[[SA]], %[[P]] fastmath<reassoc>
// CHECK: %[[P2:.*]] = arith.mulf %[[P]], %[[XV]]
// CHECK: %[[Q1:.*]] = arith.addf %[[QA]], %[[P2]] fastmath<reassoc>
// CHECK: scf.yield %[[S1]], %[[Q1]]
// CHECK-NOT: memref.store
// CHECK: }
// CHECK: memref.store %[[R]]#0, %[[S]][%[[I]]]
// CHECK: memref.store %[[R]]#1, %[[Q]][%[[I]]]
// CHECK-NOT: linalg.generic
#rows = affine_map<(i, k) -> (i, k)>
#col = affine_map<(i, k) -> (k)>
#row = affine_map<(i, k) -> (i)>
func.func @two_row_sums(%x: memref<4x8xf32>, %w: memref<8xf32>, %s: memref<4xf32>, %q: memref<4xf32>) {
  linalg.generic {indexing_maps = [#rows, #col, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : memref<4x8xf32>, memref<8xf32>) outs(%s, %q : memref<4xf32>, memref<4xf32>) {
  ^bb0(%xv: f32, %wv: f32, %sv: f32, %qv: f32):
    %p = arith.mulf %xv, %wv : f32
    %s1 = arith.addf %sv, %p fastmath<reassoc> : f32
    %p2 = arith.mulf %p, %xv : f32
    %q1 = arith.addf %qv, %p2 fastmath<reassoc> : f32
    linalg.yield %s1, %q1 : f32, f32
  }
  return
}

// -----

// Two reduction loops inside two parallel ones, a scalar operand, the
// loops' indices read in the body, an output indexed by a permutation.
// CHECK-LABEL: func.func @nested
// CHECK: scf.for %[[A:[a-z0-9_]+]] =
// CHECK: scf.for %[[B:[a-z0-9_]+]] =
// CHECK: %[[INIT:.*]] = memref.load %{{.*}}[%[[B]], %[[A]]] : memref<3x2xf32>
// CHECK: scf.for %[[C:[a-z0-9_]+]] = {{.*}} iter_args(%[[OUTER:.*]] = %[[INIT]]) -> (f32)
// CHECK: scf.for %[[D:[a-z0-9_]+]] = {{.*}} iter_args(%[[ACC:.*]] = %[[OUTER]]) -> (f32)
// CHECK: memref.load %{{.*}}[%[[A]], %[[B]], %[[C]], %[[D]]]
// CHECK: arith.index_cast %[[D]]
// CHECK: arith.addf %[[ACC]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[B]], %[[A]]] : memref<3x2xf32>
#in4 = affine_map<(a, b, c, d) -> (a, b, c, d)>
#out2 = affine_map<(a, b, c, d) -> (b, a)>
#scalar = affine_map<(a, b, c, d) -> ()>
func.func @nested(%x: memref<2x3x4x5xf32>, %scale: f32, %y: memref<3x2xf32>) {
  linalg.generic {indexing_maps = [#in4, #scalar, #out2], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %scale : memref<2x3x4x5xf32>, f32) outs(%y : memref<3x2xf32>) {
  ^bb0(%xv: f32, %sv: f32, %yv: f32):
    %d = linalg.index 3 : index
    %di = arith.index_cast %d : index to i32
    %df = arith.sitofp %di : i32 to f32
    %t = arith.mulf %xv, %sv : f32
    %u = arith.mulf %t, %df : f32
    %r = arith.addf %yv, %u fastmath<reassoc> : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Not this pass's: a reduction outside a parallel loop (the column sums
// of a norm's weight gradient vectorize along the columns as they are), an
// input in its output's buffer, ops on tensors, loops with no reduction.
// CHECK-LABEL: func.func @left
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: scf.for
#rk = affine_map<(k, j) -> (k, j)>
#j = affine_map<(k, j) -> (j)>
#ij = affine_map<(i, j) -> (i, j)>
#i = affine_map<(i, j) -> (i)>
func.func @left(%x: memref<4x8xf32>, %cols: memref<8xf32>, %rows: memref<4xf32>, %t: tensor<4x8xf32>, %te: tensor<4xf32>) -> tensor<4xf32> {
  linalg.generic {indexing_maps = [#rk, #j], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%cols : memref<8xf32>) {
  ^bb0(%xv: f32, %cv: f32):
    %s = arith.addf %cv, %xv : f32
    linalg.yield %s : f32
  }
  %view = memref.subview %x[0, 0] [4, 1] [1, 1] : memref<4x8xf32> to memref<4xf32, strided<[8]>>
  linalg.generic {indexing_maps = [#ij, #i], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x8xf32>) outs(%view : memref<4xf32, strided<[8]>>) {
  ^bb0(%xv: f32, %rv: f32):
    %s = arith.addf %rv, %xv : f32
    linalg.yield %s : f32
  }
  %r = linalg.generic {indexing_maps = [#ij, #i], iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<4x8xf32>) outs(%te : tensor<4xf32>) {
  ^bb0(%xv: f32, %rv: f32):
    %s = arith.addf %rv, %xv : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  linalg.generic {indexing_maps = [#ij, #ij], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%x : memref<4x8xf32>) {
  ^bb0(%xv: f32, %ov: f32):
    %s = arith.mulf %xv, %xv : f32
    linalg.yield %s : f32
  }
  return %r : tensor<4xf32>
}
