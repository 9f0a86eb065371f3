// RUN: pmlir-opt %s --split-input-file --pmlir-gpu-tile-and-map="block-size=32" | FileCheck %s
// A block's threads are 1 to 1024: 0 and 2048 were tiled as 1.
// RUN: not pmlir-opt %s --split-input-file --pmlir-gpu-tile-and-map="block-size=2048" 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: error: pmlir-gpu-tile-and-map: block-size must be 1 to 1024 (the threads of a CUDA block), not 2048

// A loop of rank 3 is a grid of rows (its two outer dimensions collapsed
// into one, on block_x) by tiles of 32 threads of its innermost dimension
// (thread_x; the tiles on block_y).
// CHECK-LABEL: func.func @rank_three
// CHECK: %[[ROWS:.*]] = arith.muli %{{.*}}, %c4{{.*}} : index
// CHECK: scf.parallel (%[[R:.*]], %[[T:.*]]) = ({{.*}}) to (%[[ROWS]], %{{.*}}) step (%{{.*}}, %[[TILE:.*]]) {
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%{{.*}}, %[[TILE]]) step
// CHECK: arith.remsi
// CHECK: arith.divsi
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x4x64xf32>
// CHECK: {mapping = [#gpu.loop_dim_map<processor = sequential{{.*}}>, #gpu.loop_dim_map<processor = thread_x{{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>, #gpu.loop_dim_map<processor = block_y{{.*}}>]}
func.func @rank_three(%x: memref<2x4x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c2, %c4, %c64) step (%c1, %c1, %c1) {
    memref.store %zero, %x[%i, %j, %k] : memref<2x4x64xf32>
    scf.reduce
  }
  return
}

// -----

// An innermost dimension shorter than a block gets that many threads; a
// loop mapped already (a reduction's blocks) is left as it is; a parallel
// loop nested in a parallel loop (a row's update in a one-thread kernel)
// becomes sequential loops in its thread.
// CHECK-LABEL: func.func @short_mapped_nested
// CHECK: %[[TILE:.*]] = arith.muli %{{.*}}, %c12{{.*}} : index
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%c8, %c12) step (%{{.*}}, %[[TILE]])
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>, #gpu.loop_dim_map<processor = block_y{{.*}}>]}
// CHECK-NEXT: scf.parallel (%[[B:.*]]) = (%c0) to (%c4) step (%c1) {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[B]]]
// CHECK-NEXT: scf.reduce
// CHECK-NEXT: } {mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>]}
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[K:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%[[K]]]
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x{{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>]}
func.func @short_mapped_nested(%x: memref<8x12xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c12 = arith.constant 12 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c12) step (%c1, %c1) {
    memref.store %zero, %x[%i, %j] : memref<8x12xf32>
    scf.reduce
  }
  scf.parallel (%b) = (%c0) to (%c4) step (%c1) {
    memref.store %zero, %y[%b] : memref<4xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  scf.parallel (%one) = (%c0) to (%c1) step (%c1) {
    scf.parallel (%k) = (%c0) to (%c4) step (%c1) {
      memref.store %zero, %y[%k] : memref<4xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}
