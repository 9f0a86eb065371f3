// RUN: pmlir-opt %s --split-input-file --verify-diagnostics --pmlir-gpu-kernel-loops="block-size=32" | FileCheck %s
// RUN: pmlir-opt %s --split-input-file --verify-diagnostics --pmlir-gpu-kernel-loops="block-size=32" --convert-parallel-loops-to-gpu | FileCheck %s --check-prefix=LAUNCH

// A scalar read before a loop (as AdamW's step) is sunk into the loop, and
// the loop is tiled: the innermost dimension in blocks of 32 threads
// (thread_x, block_x), the outer one on block_y.
// CHECK-LABEL: func.func @scalar_read
// CHECK-NOT: memref.load
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = {{.*}} step (%{{.*}}, %[[C32:.*]])
// CHECK: scf.parallel
// CHECK: memref.load %{{.*}}[] : memref<f32>
// CHECK: arith.mulf
// CHECK: {mapping = [#gpu.loop_dim_map<processor = sequential{{.*}}>, #gpu.loop_dim_map<processor = thread_x{{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_y{{.*}}>, #gpu.loop_dim_map<processor = block_x{{.*}}>]}
// LAUNCH-LABEL: func.func @scalar_read
// LAUNCH: gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %{{.*}}, {{.*}} = %{{.*}}) threads
// LAUNCH-NOT: scf.parallel
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

// A sequential reduction to a scalar (a mean) becomes a one-thread loop;
// a copy a parallel loop of loads and stores.
// CHECK-LABEL: func.func @sum_and_copy
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<4x8xf32>
// CHECK: memref.store
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK: scf.for
// CHECK-NOT: memref.copy
func.func @sum_and_copy(%x: memref<16xf32>, %out: memref<f32>, %a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  memref.store %zero, %out[] : memref<f32>
  scf.for %i = %c0 to %c16 step %c1 {
    %acc = memref.load %out[] : memref<f32>
    %v = memref.load %x[%i] : memref<16xf32>
    %s = arith.addf %acc, %v : f32
    memref.store %s, %out[] : memref<f32>
  }
  return
}

// -----

// A reduction along a row (a softmax's max) is one block a row: each of
// its threads strides over the row with a partial of its own, and the
// block combines them (gpu.all_reduce); every thread reads the row's old
// value before the block's barrier and stores the same result after it.
// CHECK-LABEL: func.func @row_max
// CHECK: scf.parallel (%[[ROW:.*]]) =
// CHECK: %[[OLD:.*]] = memref.load %{{.*}}[%[[ROW]]] : memref<4xf32>
// CHECK: %[[ROWMAX:.*]] = scf.parallel (%[[LANE:.*]]) = (%{{.*}}) to (%[[C32:.*]]) step (%{{.*}}) init (%[[NEGINF:.*]]) -> f32
// CHECK: scf.for %{{.*}} = %[[LANE]] to %{{.*}} step %[[C32]] iter_args(%{{.*}} = %[[NEGINF]]) -> (f32)
// CHECK: arith.maximumf
// CHECK: scf.reduce(%{{.*}} : f32)
// CHECK: arith.maximumf
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: %[[NEW:.*]] = arith.maximumf %[[OLD]], %[[ROWMAX]]
// CHECK: memref.store %[[NEW]], %{{.*}}[%[[ROW]]]
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x
// LAUNCH-LABEL: func.func @row_max
// LAUNCH: gpu.all_reduce
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_max(%x: memref<4x100xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x100xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A scalar read the host itself uses cannot move into a kernel.
func.func @host_uses_read(%x: memref<f32>) -> f32 {
  // expected-error @+1 {{'memref.load' op has no GPU lowering: it reads device memory on the host, which uses its result}}
  %v = memref.load %x[] : memref<f32>
  return %v : f32
}
