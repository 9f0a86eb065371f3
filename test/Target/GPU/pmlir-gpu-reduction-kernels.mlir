// RUN: pmlir-opt %s --split-input-file --pmlir-gpu-reduction-kernels="block-size=32" | FileCheck %s
// A block's threads are 1 to 1024 (0 divided by zero), and reduction-blocks
// is not negative.
// RUN: not pmlir-opt %s --split-input-file --pmlir-gpu-reduction-kernels="block-size=0" 2>&1 | FileCheck %s --check-prefix=BLOCK
// BLOCK: error: pmlir-gpu-reduction-kernels: block-size must be 1 to 1024 (the threads of a CUDA block), not 0
// RUN: not pmlir-opt %s --split-input-file --pmlir-gpu-reduction-kernels="reduction-blocks=-1" 2>&1 | FileCheck %s --check-prefix=BLOCKS
// BLOCKS: error: pmlir-gpu-reduction-kernels: reduction-blocks must be 0 (one block a value) or more, not -1

// A row's max is one block a row: its threads stride over the row, their
// partials combined by gpu.all_reduce; the loops are mapped here.
// CHECK-LABEL: func.func @row_max
// CHECK-NOT: linalg.generic
// CHECK: scf.parallel (%[[ROW:.*]]) = (%{{.*}}) to (%c4) step
// CHECK: scf.parallel (%[[LANE:.*]]) = (%{{.*}}) to (%c32) step
// CHECK: %[[OLD:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<4xf32>
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %[[LANE]] to %c100 step %c32 iter_args
// CHECK: arith.maximumf
// CHECK: %[[ALL:.*]] = gpu.all_reduce maximumf %[[PART]] uniform
// CHECK: %[[NEW:.*]] = arith.maximumf %[[OLD]], %[[ALL]]
// CHECK: memref.store %[[NEW]], %{{.*}}[%[[ROW]]]
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x{{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>]}
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

// A row's sum and the elementwise work after it over the same rows are one
// block a row: the fill folds into the sum, the sum reaches the division in
// a register, and the buffer freed between them is freed after.
// CHECK-LABEL: func.func @sum_then_divide
// CHECK-NOT: linalg.fill
// CHECK: %[[ZERO:.*]] = arith.constant 0.0
// CHECK: %[[SUM:.*]] = memref.alloc() : memref<8xf32>
// CHECK: scf.parallel (%[[ROW:.*]]) =
// CHECK: scf.parallel (%[[LANE:.*]]) =
// CHECK: %[[PART:.*]] = scf.for
// CHECK: %[[ALL:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK: %[[S:.*]] = arith.addf %[[ZERO]], %[[ALL]]
// CHECK: memref.store %[[S]], %[[SUM]][%[[ROW]]]
// CHECK: scf.for %[[K:.*]] = %[[LANE]] to %c48 step %c32 {
// CHECK: %[[Q:.*]] = arith.divf %{{.*}}, %[[S]]
// CHECK: memref.store %[[Q]], %{{.*}}[%[[ROW]], %[[K]]]
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>]}
// CHECK-NEXT: memref.dealloc %[[SUM]]
// CHECK-NOT: linalg.generic
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @sum_then_divide(%x: memref<8x48xf32>, %y: memref<8x48xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x48xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<8x48xf32>, memref<8xf32>) outs(%y : memref<8x48xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %q = arith.divf %in, %s : f32
    linalg.yield %q : f32
  }
  memref.dealloc %sum : memref<8xf32>
  return
}

// -----

// A column's sum over many tokens (its reduction not the innermost loop)
// is one block a column, whose threads stride over the tokens; a sum of
// fewer elements than a block and elementwise work alone are left to
// pmlir-gpu-parallel-loops.
// CHECK-LABEL: func.func @column_sums
// CHECK: scf.parallel (%[[COL:.*]]) = (%{{.*}}) to (%c48) step
// CHECK: scf.parallel (%[[LANE:.*]]) = (%{{.*}}) to (%c32) step
// CHECK: scf.for %[[T:.*]] = %[[LANE]] to %{{.*}} step %c32
// CHECK: gpu.all_reduce add
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>]}
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%{{.*}} : memref<8x48xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]}
#in = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#same = affine_map<(d0) -> (d0)>
func.func @column_sums(%g: memref<64x48xf32>, %bias: memref<48xf32>, %few: memref<8x48xf32>, %bias2: memref<48xf32>) {
  linalg.generic {indexing_maps = [#in, #col], iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<64x48xf32>) outs(%bias : memref<48xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#in, #col], iterator_types = ["reduction", "parallel"]}
      ins(%few : memref<8x48xf32>) outs(%bias2 : memref<48xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#same, #same], iterator_types = ["parallel"]}
      ins(%bias : memref<48xf32>) outs(%bias2 : memref<48xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.addf %in, %out : f32
    linalg.yield %d : f32
  }
  return
}

// -----

// A whole tensor's sum of squares of 5044 elements is cut into slices (9:
// at least 16 x 32 elements a slice), a block a slice writing its partial,
// then one block combines the partials in order with the old value.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK: %[[PARTS:.*]] = memref.alloc() : memref<9xf32>
// CHECK: scf.parallel (%[[SLICE:.*]]) = (%{{.*}}) to (%c9) step
// CHECK: scf.parallel (%[[LANE:.*]]) =
// CHECK: %[[BEGIN:.*]] = arith.muli %[[SLICE]], %c561
// CHECK: %[[END:.*]] = arith.minui %{{.*}}, %c5044
// CHECK: %[[FIRST:.*]] = arith.addi %[[BEGIN]], %[[LANE]]
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %[[FIRST]] to %[[END]] step %c32
// CHECK: %[[SUM:.*]] = gpu.all_reduce add %[[PART]]
// CHECK: memref.store %[[SUM]], %[[PARTS]][%[[SLICE]]]
// CHECK: scf.parallel
// CHECK: scf.parallel (%[[T:.*]]) =
// CHECK: %[[OLD:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK: scf.for %{{.*}} = %[[T]] to %c9 step
// CHECK: memref.load %[[PARTS]]
// CHECK: %[[ALL:.*]] = gpu.all_reduce add
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %[[ALL]]
// CHECK: memref.store %[[NEW]], %{{.*}}[] : memref<f32>
// CHECK: memref.dealloc %[[PARTS]]
#all = affine_map<(d0, d1) -> (d0, d1)>
#none = affine_map<(d0, d1) -> ()>
func.func @sum_of_squares(%g: memref<97x52xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction", "reduction"]}
      ins(%g : memref<97x52xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %q = arith.mulf %in, %in : f32
    %a = arith.addf %acc, %q : f32
    linalg.yield %a : f32
  }
  return
}
