// RUN: pmlir-opt %s --split-input-file --verify-diagnostics --pmlir-gpu-kernel-loops="block-size=32" | FileCheck %s
// RUN: pmlir-opt %s --split-input-file --verify-diagnostics --pmlir-gpu-kernel-loops="block-size=32" --convert-parallel-loops-to-gpu | FileCheck %s --check-prefix=LAUNCH
// Options that make no kernels are refused when the pipeline is built.
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-kernel-loops="block-size=0" 2>&1 | FileCheck %s --check-prefix=BAD-BLOCK
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-kernel-loops="reduction-blocks=-1" 2>&1 | FileCheck %s --check-prefix=BAD-REDUCTION
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-kernel-loops="scatter-row-groups=0" 2>&1 | FileCheck %s --check-prefix=BAD-SCATTER
// BAD-BLOCK: error: pmlir-gpu-kernel-loops: block-size must be 1 to 1024 (the threads of a CUDA block), not 0
// BAD-REDUCTION: error: pmlir-gpu-kernel-loops: reduction-blocks must be 0 (one block a value) or more, not -1
// BAD-SCATTER: error: pmlir-gpu-kernel-loops: scatter-row-groups must be 1 (every row in one) or more, not 0

// A scalar read before a loop (as AdamW's step) is sunk into the loop, and
// the loop is tiled: the rows on block_x, the innermost dimension in tiles
// of 32 threads (thread_x) on block_y.
// CHECK-LABEL: func.func @scalar_read
// CHECK-NOT: memref.load
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = {{.*}} step (%{{.*}}, %[[C32:.*]])
// CHECK: scf.parallel
// CHECK: memref.load %{{.*}}[] : memref<f32>
// CHECK: arith.mulf
// CHECK: {mapping = [#gpu.loop_dim_map<processor = sequential{{.*}}>, #gpu.loop_dim_map<processor = thread_x{{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>, #gpu.loop_dim_map<processor = block_y{{.*}}>]}
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
// block combines them (gpu.all_reduce, which every thread gets back);
// every thread reads the row's old value before the all-reduce's barrier
// and stores the same result after it.
// CHECK-LABEL: func.func @row_max
// CHECK: scf.parallel (%[[ROW:.*]]) =
// CHECK: scf.parallel (%[[LANE:.*]]) = (%{{.*}}) to (%[[C32:.*]]) step
// CHECK: %[[OLD:.*]] = memref.load %{{.*}} : memref<4xf32>
// CHECK: %[[PART:.*]] = scf.for %{{.*}} = %[[LANE]] to %{{.*}} step %[[C32]] iter_args(%{{.*}} = %[[NEGINF:.*]]) -> (f32)
// CHECK: arith.maximumf
// CHECK: %[[ROWMAX:.*]] = gpu.all_reduce maximumf %[[PART]] uniform
// CHECK: %[[NEW:.*]] = arith.maximumf %[[OLD]], %[[ROWMAX]]
// CHECK: memref.store %[[NEW]], %{{.*}}[%[[ROW]]]
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x
// LAUNCH-LABEL: func.func @row_max
// LAUNCH: gpu.launch
// LAUNCH: gpu.all_reduce maximumf
// LAUNCH-NOT: scf.parallel
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

// A layer norm's steps, a row's sum, its squared deviations' sum and the
// normalization, are one kernel of one block a row: the fills of the
// sums fold into their reductions, each reduced value reaches the later
// steps in a register (every thread has it from the all-reduce) and is
// stored too; the buffer freed between the steps is freed after.
// CHECK-LABEL: func.func @layer_norm_rows
// CHECK-NOT: linalg.fill
// CHECK: scf.parallel (%[[ROW:.*]]) =
// CHECK: scf.parallel (%[[LANE:.*]]) =
// CHECK: scf.for
// CHECK: %[[SUM:.*]] = gpu.all_reduce add
// CHECK: %[[MEAN:.*]] = arith.addf %{{.*}}, %[[SUM]]
// CHECK: memref.store %[[MEAN]], %[[S1:.*]][%[[ROW]]]
// CHECK: scf.for
// CHECK: arith.mulf %[[MEAN]]
// CHECK: %[[SQ:.*]] = gpu.all_reduce add
// CHECK: %[[VAR:.*]] = arith.addf %{{.*}}, %[[SQ]]
// CHECK: memref.store %[[VAR]]
// CHECK: scf.for
// CHECK-NOT: memref.load %[[S1]]
// CHECK: arith.mulf %[[MEAN]]
// CHECK: arith.mulf %[[VAR]]
// CHECK: math.rsqrt
// CHECK: memref.store
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NEXT: memref.dealloc
// CHECK-NOT: scf.parallel
// CHECK: return
// LAUNCH-LABEL: func.func @layer_norm_rows
// LAUNCH-COUNT-1: gpu.launch
// LAUNCH-NOT: gpu.launch
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @layer_norm_rows(%x: memref<8x48xf32>, %g: memref<48xf32>, %y: memref<8x48xf32>, %var: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %inv = arith.constant 0.0208333 : f32
  %eps = arith.constant 1.0e-5 : f32
  %sum = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<8xf32>)
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x48xf32>) outs(%sum : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  }
  linalg.fill ins(%zero : f32) outs(%var : memref<8xf32>)
  linalg.generic {indexing_maps = [#rows, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %sum : memref<8x48xf32>, memref<8xf32>) outs(%var : memref<8xf32>) {
  ^bb0(%in: f32, %s: f32, %acc: f32):
    %m = arith.mulf %s, %inv : f32
    %d = arith.subf %in, %m : f32
    %q = arith.mulf %d, %d : f32
    %a = arith.addf %acc, %q : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#rows, #row, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum, %var, %g : memref<8x48xf32>, memref<8xf32>, memref<8xf32>, memref<48xf32>) outs(%y : memref<8x48xf32>) {
  ^bb0(%in: f32, %s: f32, %v: f32, %gamma: f32, %out: f32):
    %m = arith.mulf %s, %inv : f32
    %d = arith.subf %in, %m : f32
    %vm = arith.mulf %v, %inv : f32
    %ve = arith.addf %vm, %eps : f32
    %r = math.rsqrt %ve : f32
    %n = arith.mulf %d, %r : f32
    %o = arith.mulf %n, %gamma : f32
    linalg.yield %o : f32
  }
  memref.dealloc %sum : memref<8xf32>
  return
}

// -----

// A causal softmax with its mask computed from the loop indices: the max,
// the sum of exponentials and the quotient are one block a row, the
// indices the row's and the thread's own.
// CHECK-LABEL: func.func @causal_softmax_rows
// CHECK-NOT: linalg.index
// CHECK: scf.parallel (%[[B:.*]], %[[R:.*]]) =
// CHECK: scf.parallel (%[[LANE:.*]]) =
// CHECK: scf.for %[[K:.*]] = %[[LANE]]
// CHECK: arith.cmpi ugt, %[[K]], %[[R]]
// CHECK: gpu.all_reduce maximumf
// CHECK: math.exp
// CHECK: gpu.all_reduce add
// CHECK: scf.for %[[K2:.*]] = %[[LANE]]
// CHECK: arith.cmpi ugt, %[[K2]], %[[R]]
// CHECK: arith.divf
// CHECK: memref.store
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_y{{.*}}>, #gpu.loop_dim_map<processor = block_x
// CHECK-NOT: scf.parallel
// LAUNCH-LABEL: func.func @causal_softmax_rows
// LAUNCH-COUNT-1: gpu.launch
// LAUNCH-NOT: gpu.launch
#s3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @causal_softmax_rows(%x: memref<2x16x16xf32>, %p: memref<2x16x16xf32>, %max: memref<2x16xf32>, %sum: memref<2x16xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%ninf : f32) outs(%max : memref<2x16xf32>)
  linalg.generic {indexing_maps = [#s3, #r3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<2x16x16xf32>) outs(%max : memref<2x16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %masked = arith.cmpi ugt, %j, %i : index
    %v = arith.select %masked, %ninf, %in : f32
    %m = arith.maximumf %acc, %v : f32
    linalg.yield %m : f32
  }
  linalg.fill ins(%zero : f32) outs(%sum : memref<2x16xf32>)
  linalg.generic {indexing_maps = [#s3, #r3, #r3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %max : memref<2x16x16xf32>, memref<2x16xf32>) outs(%sum : memref<2x16xf32>) {
  ^bb0(%in: f32, %mx: f32, %acc: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %masked = arith.cmpi ugt, %j, %i : index
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    %v = arith.select %masked, %zero, %e : f32
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#s3, #r3, #r3, #s3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %max, %sum : memref<2x16x16xf32>, memref<2x16xf32>, memref<2x16xf32>) outs(%p : memref<2x16x16xf32>) {
  ^bb0(%in: f32, %mx: f32, %s: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %masked = arith.cmpi ugt, %j, %i : index
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    %q = arith.divf %e, %s : f32
    %v = arith.select %masked, %zero, %q : f32
    linalg.yield %v : f32
  }
  return
}

// -----

// Elementwise work before the reductions (a residual add before a norm)
// joins the group: each thread writes its part of the row, a barrier, and
// the reductions read the whole row.
// CHECK-LABEL: func.func @residual_then_row_sum
// CHECK: scf.parallel (%[[ROW:.*]]) =
// CHECK: scf.parallel (%[[LANE:.*]]) =
// CHECK: scf.for %{{.*}} = %[[LANE]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[RES:.*]][
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %[[LANE]]
// CHECK: memref.load %[[RES]]
// CHECK: gpu.all_reduce add
// CHECK-NOT: scf.parallel
// LAUNCH-LABEL: func.func @residual_then_row_sum
// LAUNCH-COUNT-1: gpu.launch
// LAUNCH-NOT: gpu.launch
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @residual_then_row_sum(%x: memref<8x48xf32>, %y: memref<8x48xf32>, %r: memref<8x48xf32>, %s: memref<8xf32>) {
  linalg.generic {indexing_maps = [#rows, #rows, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<8x48xf32>, memref<8x48xf32>) outs(%r : memref<8x48xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %sum = arith.addf %a, %b : f32
    linalg.yield %sum : f32
  }
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%r : memref<8x48xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %q = arith.mulf %in, %in : f32
    %a = arith.addf %acc, %q : f32
    linalg.yield %a : f32
  }
  return
}

// -----

// Elementwise work over other rows (here a transposed read, row extents
// that differ) is no step of the group: two kernels.
// CHECK-LABEL: func.func @other_rows_are_not_fused
// CHECK: gpu.all_reduce add
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK: scf.parallel
// CHECK-NOT: gpu.all_reduce
// LAUNCH-LABEL: func.func @other_rows_are_not_fused
// LAUNCH-COUNT-2: gpu.launch
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @other_rows_are_not_fused(%x: memref<8x48xf32>, %s: memref<8xf32>, %y: memref<8x40xf32>) {
  linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x48xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %acc, %in : f32
    linalg.yield %a : f32
  }
  linalg.generic {indexing_maps = [#row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%s : memref<8xf32>) outs(%y : memref<8x40xf32>) {
  ^bb0(%v: f32, %out: f32):
    linalg.yield %v : f32
  }
  return
}

// -----

// A loop of rank 4 (a transpose of heads) is a grid of rows, its three
// outer dimensions collapsed into one on block_x, by tiles of its
// innermost dimension on block_y.
// CHECK-LABEL: func.func @rank_four
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = {{.*}} to (%[[ROWS:.*]], %{{.*}}) step
// CHECK: {mapping = [#gpu.loop_dim_map<processor = sequential{{.*}}>, #gpu.loop_dim_map<processor = thread_x{{.*}}>]}
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x{{.*}}>, #gpu.loop_dim_map<processor = block_y{{.*}}>]}
// LAUNCH-LABEL: func.func @rank_four
// LAUNCH: gpu.launch blocks(
// LAUNCH-NOT: scf.parallel
#in4 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
#out4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @rank_four(%x: memref<2x16x4x16xf32>, %y: memref<2x4x16x16xf32>) {
  linalg.generic {indexing_maps = [#in4, #out4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<2x16x4x16xf32>) outs(%y : memref<2x4x16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

// A scatter into rows (embedding_grad: for each token, its row of the
// table += its gradient row) runs one thread a column and group of rows
// (the row index modulo the groups: min(32, 10 rows) of them), each
// walking the tokens in order and adding those of its group's rows,
// instead of one thread for everything.
// CHECK-LABEL: func.func @scatter_rows
// CHECK: scf.parallel (%[[ROWS:.*]], %{{.*}}) =
// CHECK: scf.parallel (%[[ROW0:.*]], %{{.*}}) =
// CHECK: %[[OUTER:.*]] = arith.addi %[[ROW0]], %[[ROWS]] : index
// CHECK: %[[GROUP:.*]] = arith.divsi %[[OUTER]], %{{.*}} : index
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// CHECK: memref.load %{{.*}}[%[[T]]] : memref<6xi64>
// CHECK: %[[ROW:.*]] = arith.index_cast
// CHECK: scf.if
// CHECK: %[[OF:.*]] = arith.remui %[[ROW]], %{{.*}} : index
// CHECK: %[[MINE:.*]] = arith.cmpi eq, %[[OF]], %[[GROUP]] : index
// CHECK: scf.if %[[MINE]]
// CHECK: arith.addf
// CHECK: memref.store
// CHECK: {mapping = [#gpu.loop_dim_map<processor = sequential{{.*}}>, #gpu.loop_dim_map<processor = thread_x{{.*}}>]}
// LAUNCH-LABEL: func.func @scatter_rows
// LAUNCH: gpu.launch blocks(
// LAUNCH: scf.for
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @scatter_rows(%ids: memref<6xi64>, %grad: memref<6x64xf32>, %table: memref<10x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c10 = arith.constant 10 : index
  scf.for %t = %c0 to %c6 step %c1 {
    %id = memref.load %ids[%t] : memref<6xi64>
    %row = arith.index_cast %id : i64 to index
    %in = arith.cmpi ult, %row, %c10 : index
    scf.if %in {
      %to = memref.subview %table[%row, 0] [1, 64] [1, 1] : memref<10x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
      %from = memref.subview %grad[%t, 0] [1, 64] [1, 1] : memref<6x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
      linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
          ins(%from : memref<1x64xf32, strided<[64, 1], offset: ?>>) outs(%to : memref<1x64xf32, strided<[64, 1], offset: ?>>) {
      ^bb0(%g: f32, %o: f32):
        %sum = arith.addf %o, %g : f32
        linalg.yield %sum : f32
      }
    }
  }
  return
}

// -----

// A scatter whose token also reads another row of the table it writes
// (here the row after it) is not split into groups of rows: another
// group's thread may be writing that row. One thread a column walks the
// tokens.
// CHECK-LABEL: func.func @scatter_reading_another_row
// CHECK-NOT: arith.remui
// CHECK: scf.for
// CHECK-NOT: arith.remui
// CHECK: arith.addf
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @scatter_reading_another_row(%ids: memref<6xi64>, %table: memref<10x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c9 = arith.constant 9 : index
  scf.for %t = %c0 to %c6 step %c1 {
    %id = memref.load %ids[%t] : memref<6xi64>
    %row = arith.index_cast %id : i64 to index
    %in = arith.cmpi ult, %row, %c9 : index
    scf.if %in {
      %next = arith.addi %row, %c1 : index
      %to = memref.subview %table[%row, 0] [1, 64] [1, 1] : memref<10x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
      %from = memref.subview %table[%next, 0] [1, 64] [1, 1] : memref<10x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
      linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
          ins(%from : memref<1x64xf32, strided<[64, 1], offset: ?>>) outs(%to : memref<1x64xf32, strided<[64, 1], offset: ?>>) {
      ^bb0(%g: f32, %o: f32):
        %sum = arith.addf %o, %g : f32
        linalg.yield %sum : f32
      }
    }
  }
  return
}

// -----

// A sequential loop whose updates cross columns (each token's row added
// reversed) keeps its order in one thread.
// CHECK-LABEL: func.func @crossing_columns_stay_sequential
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
#rev = affine_map<(d0, d1) -> (d0, 63 - d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @crossing_columns_stay_sequential(%ids: memref<6xi64>, %grad: memref<6x64xf32>, %table: memref<10x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  scf.for %t = %c0 to %c6 step %c1 {
    %id = memref.load %ids[%t] : memref<6xi64>
    %row = arith.index_cast %id : i64 to index
    %to = memref.subview %table[%row, 0] [1, 64] [1, 1] : memref<10x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
    %from = memref.subview %grad[%t, 0] [1, 64] [1, 1] : memref<6x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
    linalg.generic {indexing_maps = [#rev, #id2], iterator_types = ["parallel", "parallel"]}
        ins(%to : memref<1x64xf32, strided<[64, 1], offset: ?>>) outs(%to : memref<1x64xf32, strided<[64, 1], offset: ?>>) {
    ^bb0(%g: f32, %o: f32):
      %sum = arith.addf %o, %g : f32
      linalg.yield %sum : f32
    }
  }
  return
}

// -----

// A read the host itself uses of a buffer it cannot copy (of dynamic
// shape) cannot move into a kernel.
func.func @host_uses_read(%x: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.load' op has no GPU lowering: it reads device memory on the host, which uses its result}}
  %v = memref.load %x[%c0] : memref<?xf32>
  return %v : f32
}

// -----

// A reduction of a whole tensor to one value (a gradient's sum of squares
// for clipping) of many elements runs on many blocks: the elements (in
// row-major order) are cut into slices of consecutive elements, 9 here
// (5044 elements, at least 16 x 32 a slice), a block a slice writing its
// partial to a buffer of partials; then one block combines the partials in
// slice order with the value the output held.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK: %[[PARTS:.*]] = memref.alloc() : memref<9xf32>
// CHECK: scf.parallel (%[[SLICE:.*]]) = (%{{.*}}) to (%[[C9:.*]]) step
// CHECK: scf.parallel (%[[LANE:.*]]) =
// CHECK: %[[BEGIN:.*]] = arith.muli %[[SLICE]], %[[CHUNK:.*]] : index
// CHECK: %[[NEXT:.*]] = arith.addi %[[BEGIN]], %[[CHUNK]]
// CHECK: %[[END:.*]] = arith.minui %[[NEXT]], %{{.*}} : index
// CHECK: %[[FIRST:.*]] = arith.addi %[[BEGIN]], %[[LANE]]
// CHECK: %[[PART:.*]] = scf.for %[[FLAT:.*]] = %[[FIRST]] to %[[END]] step
// CHECK: arith.remui %[[FLAT]]
// CHECK: arith.divui %[[FLAT]]
// CHECK: arith.mulf
// CHECK: %[[SLICESUM:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK-NOT: memref.load %{{.*}}[] : memref<f32>
// CHECK: memref.store %[[SLICESUM]], %[[PARTS]][%[[SLICE]]] : memref<9xf32>
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK: scf.parallel
// CHECK: scf.parallel (%[[LANE2:.*]]) = (%{{.*}}) to (%[[W:.*]]) step
// CHECK: %[[OLD:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK: %[[P:.*]] = scf.for %[[K:.*]] = %[[LANE2]] to %[[C9]] step %[[W]]
// CHECK: memref.load %[[PARTS]][%[[K]]] : memref<9xf32>
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce add %[[P]] uniform
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[TOTAL]]
// CHECK: memref.store %[[SUM]], %{{.*}}[] : memref<f32>
// CHECK: memref.dealloc %[[PARTS]]
// LAUNCH-LABEL: func.func @sum_of_squares
// LAUNCH: gpu.launch
// LAUNCH: gpu.all_reduce add
// LAUNCH: gpu.launch
// LAUNCH: gpu.all_reduce add
#all = affine_map<(d0, d1) -> (d0, d1)>
#none = affine_map<(d0, d1) -> ()>
func.func @sum_of_squares(%g: memref<97x52xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction", "reduction"]}
      ins(%g : memref<97x52xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A whole tensor of fewer elements than two slices is one block: its
// threads stride over the elements, their partials combined by
// gpu.all_reduce.
// CHECK-LABEL: func.func @small_sum
// CHECK-NOT: memref.alloc
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK: scf.parallel (%[[LANE:.*]]) =
// CHECK: %[[OLD:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK: %[[PART:.*]] = scf.for %[[FLAT:.*]] = %[[LANE]] to
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[TOTAL]]
// CHECK: memref.store %[[SUM]], %{{.*}}[] : memref<f32>
// CHECK: {mapping = [#gpu.loop_dim_map<processor = thread_x
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NOT: gpu.all_reduce
// CHECK: return
#all = affine_map<(d0, d1) -> (d0, d1)>
#none = affine_map<(d0, d1) -> ()>
func.func @small_sum(%g: memref<31x32xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction", "reduction"]}
      ins(%g : memref<31x32xf32>) outs(%out : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Few values of many elements each (a max over 4096 tokens of 3 columns):
// each value's elements in slices, 8 of them (512 elements each), on a
// grid of slices (block_x) by values (block_y); then a block a value over
// its 8 partials, combined with max.
// CHECK-LABEL: func.func @few_columns
// CHECK: %[[PARTS:.*]] = memref.alloc() : memref<3x8xf32>
// CHECK: scf.parallel (%[[COL:.*]], %[[SLICE:.*]]) =
// CHECK: gpu.all_reduce maximumf
// CHECK: memref.store %{{.*}}, %[[PARTS]][%[[COL]], %[[SLICE]]] : memref<3x8xf32>
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_y{{.*}}>, #gpu.loop_dim_map<processor = block_x
// CHECK: scf.parallel (%[[COL2:.*]]) =
// CHECK: %[[OLD:.*]] = memref.load %{{.*}}[%[[COL2]]] : memref<3xf32>
// CHECK: memref.load %[[PARTS]][%[[COL2]], %{{.*}}] : memref<3x8xf32>
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce maximumf
// CHECK: %[[MAX:.*]] = arith.maximumf %[[OLD]], %[[TOTAL]]
// CHECK: memref.store %[[MAX]], %{{.*}}[%[[COL2]]] : memref<3xf32>
// CHECK: memref.dealloc %[[PARTS]]
#tokens = affine_map<(d0, d1) -> (d0, d1)>
#column = affine_map<(d0, d1) -> (d1)>
func.func @few_columns(%g: memref<4096x3xf32>, %out: memref<3xf32>) {
  linalg.generic {indexing_maps = [#tokens, #column], iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<4096x3xf32>) outs(%out : memref<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.maximumf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A column's sum over the tokens (a bias's gradient) is a block a column,
// its threads striding over the tokens; a sum over fewer elements than a
// block stays one thread's.
// CHECK-LABEL: func.func @column_sums
// CHECK: scf.parallel (%[[COL:.*]]) = (%{{.*}}) to (%[[C48:.*]]) step
// CHECK: scf.parallel (%[[LANE:.*]]) =
// CHECK: memref.load %{{.*}}[%[[COL]]] : memref<48xf32>
// CHECK: scf.for %[[FLAT:.*]] = %[[LANE]] to
// CHECK: gpu.all_reduce add
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[COL]]] : memref<48xf32>
// CHECK: {mapping = [#gpu.loop_dim_map<processor = block_x
// CHECK-NOT: gpu.all_reduce
// CHECK: return
#tokens = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#column = affine_map<(d0, d1, d2) -> (d2)>
func.func @column_sums(%g: memref<4x16x48xf32>, %bias: memref<48xf32>, %few: memref<2x3x48xf32>, %bias2: memref<48xf32>) {
  linalg.generic {indexing_maps = [#tokens, #column], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%g : memref<4x16x48xf32>) outs(%bias : memref<48xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#tokens, #column], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%few : memref<2x3x48xf32>) outs(%bias2 : memref<48xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}
