// RUN: pmlir-opt %s --split-input-file --pmlir-gpu-scatter-by-columns | FileCheck %s
// RUN: pmlir-opt %s --split-input-file --pmlir-gpu-scatter-by-columns="scatter-row-groups=1" | FileCheck %s --check-prefix=ONE

// A scatter into rows (embedding_grad after pmlir-gpu-parallel-loops: for
// each token, its row of the table += its gradient row) runs one thread a
// column and group of rows (the row index modulo min(32, 10 rows) groups),
// each walking the tokens in order and adding those of its group's rows.
// With one group, one thread a column walks every token.
// CHECK-LABEL: func.func @scatter_rows
// CHECK: scf.parallel (%[[GROUP:.*]], %[[I:.*]], %[[J:.*]]) = ({{.*}}) to (%c10{{.*}}, %c1{{.*}}, %c64{{.*}}) step
// CHECK-NEXT: scf.for %[[T:.*]] = %{{.*}} to %c6 step
// CHECK-NEXT: memref.load %{{.*}}[%[[T]]] : memref<6xi64>
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast
// CHECK: scf.if
// CHECK: %[[OF:.*]] = arith.remui %[[ROW]], %{{.*}} : index
// CHECK-NEXT: %[[MINE:.*]] = arith.cmpi eq, %[[OF]], %[[GROUP]] : index
// CHECK-NEXT: scf.if %[[MINE]] {
// CHECK-NEXT: memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK-NEXT: memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store %{{.*}}[%[[I]], %[[J]]]
// ONE-LABEL: func.func @scatter_rows
// ONE-NOT: arith.remui
// ONE: scf.parallel (%[[I:.*]], %[[J:.*]]) = ({{.*}}) to (%c1{{.*}}, %c64{{.*}}) step
// ONE-NEXT: scf.for
// ONE-NOT: arith.remui
// ONE: memref.store %{{.*}}[%[[I]], %[[J]]]
func.func @scatter_rows(%ids: memref<6xi64>, %grad: memref<6x64xf32>, %table: memref<10x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c10 = arith.constant 10 : index
  %c64 = arith.constant 64 : index
  scf.for %t = %c0 to %c6 step %c1 {
    %id = memref.load %ids[%t] : memref<6xi64>
    %row = arith.index_cast %id : i64 to index
    %in = arith.cmpi ult, %row, %c10 : index
    scf.if %in {
      %to = memref.subview %table[%row, 0] [1, 64] [1, 1] : memref<10x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
      %from = memref.subview %grad[%t, 0] [1, 64] [1, 1] : memref<6x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
      scf.parallel (%i, %j) = (%c0, %c0) to (%c1, %c64) step (%c1, %c1) {
        %g = memref.load %from[%i, %j] : memref<1x64xf32, strided<[64, 1], offset: ?>>
        %o = memref.load %to[%i, %j] : memref<1x64xf32, strided<[64, 1], offset: ?>>
        %sum = arith.addf %o, %g : f32
        memref.store %sum, %to[%i, %j] : memref<1x64xf32, strided<[64, 1], offset: ?>>
        scf.reduce
      }
    }
  }
  return
}

// -----

// A token whose update reads another column of the rows it writes (the row
// added reversed) keeps the sequential loop: the threads would race.
// CHECK-LABEL: func.func @crossing_columns
// CHECK-NEXT: arith.constant
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: scf.parallel
func.func @crossing_columns(%ids: memref<6xi64>, %table: memref<10x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  scf.for %t = %c0 to %c6 step %c1 {
    %id = memref.load %ids[%t] : memref<6xi64>
    %row = arith.index_cast %id : i64 to index
    %to = memref.subview %table[%row, 0] [1, 64] [1, 1] : memref<10x64xf32> to memref<1x64xf32, strided<[64, 1], offset: ?>>
    scf.parallel (%i, %j) = (%c0, %c0) to (%c1, %c64) step (%c1, %c1) {
      %r = arith.subi %c63, %j : index
      %g = memref.load %to[%i, %r] : memref<1x64xf32, strided<[64, 1], offset: ?>>
      %o = memref.load %to[%i, %j] : memref<1x64xf32, strided<[64, 1], offset: ?>>
      %sum = arith.addf %o, %g : f32
      memref.store %sum, %to[%i, %j] : memref<1x64xf32, strided<[64, 1], offset: ?>>
      scf.reduce
    }
  }
  return
}
