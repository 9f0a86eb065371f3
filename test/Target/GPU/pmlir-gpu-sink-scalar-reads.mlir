// RUN: pmlir-opt %s --split-input-file --pmlir-gpu-sink-scalar-reads | FileCheck %s

// A scalar read before a loop (as AdamW's step) and the pure arithmetic on
// it move into the loop, where every thread reads it.
// CHECK-LABEL: func.func @scalar_read
// CHECK-NOT: memref.load
// CHECK: scf.parallel
// CHECK-NEXT: %[[S:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK-NEXT: %[[H:.*]] = arith.mulf %[[S]], %{{.*}} : f32
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.mulf %{{.*}}, %[[H]] : f32
func.func @scalar_read(%step: memref<f32>, %x: memref<8x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %s = memref.load %step[] : memref<f32>
  %half = arith.constant 0.5 : f32
  %h = arith.mulf %s, %half : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c64) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<8x64xf32>
    %w = arith.mulf %v, %h : f32
    memref.store %w, %x[%i, %j] : memref<8x64xf32>
    scf.reduce
  }
  return
}

// -----

// A read whose buffer is written between it and the loop stays where it
// is: moved, it would read the new value.
// CHECK-LABEL: func.func @written_between
// CHECK: %[[S:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK-NEXT: memref.store
// CHECK-NEXT: scf.parallel
// CHECK-NEXT: memref.store %[[S]]
func.func @written_between(%step: memref<f32>, %x: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %s = memref.load %step[] : memref<f32>
  memref.store %one, %step[] : memref<f32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    memref.store %s, %x[%i] : memref<64xf32>
    scf.reduce
  }
  return
}
