// RUN: pmlir-opt %s --split-input-file --pmlir-gpu-parallel-loops | FileCheck %s

// A column sum with its reduction outermost: the parallel dimension is put
// outermost, one scf.parallel over the columns, the reduction an scf.for
// inside (each thread's own sum).
// CHECK-LABEL: func.func @column_sum
// CHECK-NOT: linalg.generic
// CHECK: scf.parallel (%[[COL:.*]]) = (%{{.*}}) to (%c48) step
// CHECK-NEXT: scf.for %[[T:.*]] = %{{.*}} to %c16 step
// CHECK: %[[TI:.*]] = affine.apply #{{.*}}(%[[T]])
// CHECK: %[[CI:.*]] = affine.apply #{{.*}}(%[[COL]])
// CHECK: memref.load %{{.*}}[%[[TI]], %[[CI]]] : memref<16x48xf32>
// CHECK: arith.addf
// CHECK: memref.store
#in = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @column_sum(%g: memref<16x48xf32>, %bias: memref<48xf32>) {
  linalg.generic {indexing_maps = [#in, #col], iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<16x48xf32>) outs(%bias : memref<48xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  }
  return
}

// -----

// A copy is a parallel loop of loads and stores; a 0-d copy one load and
// store, left for pmlir-gpu-wrap-sequential-work. A copy inside a parallel
// loop stays.
// CHECK-LABEL: func.func @copies
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%c4, %c8) step
// CHECK-NEXT: %[[V:.*]] = memref.load %{{.*}}[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK-NEXT: memref.store %[[V]], %{{.*}}[%[[I]], %[[J]]] : memref<4x8xf32>
// CHECK: %[[S:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK-NEXT: memref.store %[[S]], %{{.*}}[] : memref<f32>
// CHECK: scf.parallel
// CHECK-NEXT: memref.copy
func.func @copies(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %s: memref<f32>, %t: memref<f32>, %r: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  memref.copy %s, %t : memref<f32> to memref<f32>
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    memref.copy %b, %r : memref<4x8xf32> to memref<4x8xf32>
    scf.reduce
  }
  return
}
