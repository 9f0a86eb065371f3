// RUN: pmlir-opt %s -split-input-file --pmlir-update-arguments-in-place="entry=train_step" | FileCheck %s

// An update bufferization ran in place (the returned buffer is the
// argument's) is no longer returned; one it ran elsewhere is copied into
// the argument.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[P:.*]]: memref<4xf32>, %[[M:.*]]: memref<4xf32>, %[[G:.*]]: memref<4xf32>) -> memref<f32> {
func.func @train_step(%p: memref<4xf32>, %m: memref<4xf32>, %g: memref<4xf32>)
    -> (memref<f32>, memref<4xf32> {tfm.updates = 0 : i64}, memref<4xf32> {tfm.updates = 1 : i64}) {
  %loss = memref.alloc() : memref<f32>
  %new = memref.alloc() : memref<4xf32>
  // CHECK: %[[LOSS:.*]] = memref.alloc() : memref<f32>
  // CHECK: %[[NEW:.*]] = memref.alloc() : memref<4xf32>
  // CHECK: memref.copy %[[NEW]], %[[M]] : memref<4xf32> to memref<4xf32>
  // CHECK-NEXT: return %[[LOSS]] : memref<f32>
  return %loss, %p, %new : memref<f32>, memref<4xf32>, memref<4xf32>
}

// -----

// Other functions are left alone.
// CHECK-LABEL: func.func @other(
// CHECK-SAME: -> (memref<4xf32> {tfm.updates = 0 : i64})
func.func @other(%p: memref<4xf32>) -> (memref<4xf32> {tfm.updates = 0 : i64}) {
  return %p : memref<4xf32>
}
