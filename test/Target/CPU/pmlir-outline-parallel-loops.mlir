// RUN: pmlir-opt %s --pmlir-outline-parallel-loops --split-input-file | FileCheck %s
// RUN: pmlir-opt %s --pmlir-outline-parallel-loops=min-work=1000000000 --split-input-file | FileCheck %s --check-prefix=NONE

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// An elementwise op over rows: the body takes the rows [begin, end), its
// operands and the scalar it reads; the constant is cloned in. The
// dispatch passes the rows and the work of one (768 columns times two
// operations).
// CHECK-LABEL: func.func private @elementwise_parallel0_dispatch
// CHECK-SAME: (index, index, memref<512x768xf32>, memref<512x768xf32>, f32)
// CHECK-SAME: attributes {pmlir.parallel_body = @elementwise_parallel0}
// What stays in the function is small: compiled for size; the body is not.
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: attributes {passthrough = ["optsize"]}
// CHECK-DAG: %[[ROWS:.*]] = arith.constant 512 : index
// CHECK-DAG: %[[WORK:.*]] = arith.constant 1536 : index
// CHECK: call @elementwise_parallel0_dispatch(%[[ROWS]], %[[WORK]], %arg0, %arg1, %arg2)
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK: func.func private @elementwise_parallel0(%[[BEGIN:[a-z0-9_]+]]: index, %[[END:[a-z0-9_]+]]: index, %[[X:[a-z0-9_]+]]: memref<512x768xf32>, %[[Y:[a-z0-9_]+]]: memref<512x768xf32>, %[[S:[a-z0-9_]+]]: f32)
// CHECK-NOT: passthrough
// CHECK: %[[TWO:.*]] = arith.constant 2.0
// CHECK: %[[SIZE:.*]] = arith.subi %[[END]], %[[BEGIN]]
// CHECK-DAG: %[[XS:.*]] = memref.subview %[[X]][%[[BEGIN]], 0] [%[[SIZE]], 768] [1, 1]
// CHECK-DAG: %[[YS:.*]] = memref.subview %[[Y]][%[[BEGIN]], 0] [%[[SIZE]], 768] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[XS]] : {{.*}}) outs(%[[YS]] : {{.*}})
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: arith.addf %{{.*}}, %[[S]]
// NONE-LABEL: func.func @elementwise
// NONE-SAME: attributes {passthrough = ["optsize"]}
// NONE-NOT: call
// NONE: linalg.generic
// NONE-NOT: call
// NONE: return
func.func @elementwise(%x: memref<512x768xf32>, %y: memref<512x768xf32>, %s: f32) {
  %two = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<512x768xf32>) outs(%y : memref<512x768xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %two : f32
    %n = arith.addf %m, %s : f32
    linalg.yield %n : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A sum over rows into a row of columns (a bias gradient): the reduction
// is never split; each chunk takes some of the columns and all rows.
// CHECK-LABEL: func.func @column_sum
// CHECK: %[[COLS:.*]] = arith.constant 768 : index
// CHECK: call @column_sum_parallel0_dispatch(%[[COLS]],
// CHECK: func.func private @column_sum_parallel0(%[[BEGIN:[a-z0-9_]+]]: index, %[[END:[a-z0-9_]+]]: index,
// CHECK: memref.subview %{{.*}}[0, %[[BEGIN]]] [512, %{{.*}}] [1, 1]
// CHECK: memref.subview %{{.*}}[%[[BEGIN]]] [%{{.*}}] [1]
// CHECK: iterator_types = ["reduction", "parallel"]
func.func @column_sum(%x: memref<512x768xf32>, %c: memref<768xf32>) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<512x768xf32>) outs(%c : memref<768xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.addf %a, %b : f32
    linalg.yield %n : f32
  }
  return
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// The outermost dimension with 16 iterations or more is split (here the
// second: 4 batches are too few to share among threads).
// CHECK-LABEL: func.func @short_outer
// CHECK: %[[SEQ:.*]] = arith.constant 128 : index
// CHECK: call @short_outer_parallel0_dispatch(%[[SEQ]],
// CHECK: func.func private @short_outer_parallel0(%[[BEGIN:[a-z0-9_]+]]: index,
// CHECK: memref.subview %{{.*}}[0, %[[BEGIN]], 0] [4, %{{.*}}, 768] [1, 1, 1]
func.func @short_outer(%x: memref<4x128x768xf32>, %y: memref<4x128x768xf32>) {
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<4x128x768xf32>) outs(%y : memref<4x128x768xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  return
}

// -----

// A dynamic extent: outlined whatever the static work, the count and the
// work measured at the call (the columns times one operation); ops in
// loops and fills too.
// CHECK-LABEL: func.func @dynamic_in_loop
// CHECK: scf.for
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[COLS:.*]] = memref.dim %arg0, %c1
// CHECK: call @dynamic_in_loop_parallel0_dispatch(%[[ROWS]], %[[COLS]], %arg1, %arg0)
// CHECK: func.func private @dynamic_in_loop_parallel0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: f32, %{{.*}}: memref<?x?xf32>)
// CHECK: linalg.fill
func.func @dynamic_in_loop(%y: memref<?x?xf32>, %s: f32, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    linalg.fill ins(%s : f32) outs(%y : memref<?x?xf32>)
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Stay inline: work below min-work, a full reduction (no parallel
// dimension), and an op on tensors.
// CHECK-LABEL: func.func @inline
// CHECK-NOT: call
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: func.func private @inline_parallel
func.func @inline(%small: memref<8x8xf32>, %x: memref<512x768xf32>, %sum: memref<f32>,
                  %t: tensor<512x768xf32>) -> tensor<512x768xf32> {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%small : memref<8x8xf32>) outs(%small : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<512x768xf32>) outs(%sum : memref<f32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.addf %a, %b : f32
    linalg.yield %n : f32
  }
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<512x768xf32>) outs(%t : tensor<512x768xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<512x768xf32>
  return %r : tensor<512x768xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A function's own passthrough attributes stay; optsize joins them.
// CHECK-LABEL: func.func @small_with_attributes
// CHECK-SAME: attributes {passthrough = ["noinline", "optsize"]}
// CHECK-NOT: call
// CHECK: linalg.generic
func.func @small_with_attributes(%x: memref<16xf32>, %y: memref<16xf32>)
    attributes {passthrough = ["noinline"]} {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%a: f32, %b: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Ops alike share one body: two large negations (one dispatch, called
// twice), and two small ones on two microbatches' slices of one buffer (at
// static offsets 0 and 64, passed at any offset), whose serial body, small
// as it is, LLVM must not inline back. An op like no other (the small
// copy) stays where it is.
// CHECK-LABEL: func.func private @shared_parallel0_dispatch
// CHECK-SAME: attributes {pmlir.parallel_body = @shared_parallel0}
// CHECK-NOT: _dispatch
// CHECK-LABEL: func.func @shared
// CHECK: call @shared_parallel0_dispatch(%{{.*}}, %{{.*}}, %arg0, %arg1)
// CHECK: call @shared_parallel0_dispatch(%{{.*}}, %{{.*}}, %arg1, %arg0)
// CHECK: %[[SLICE0:.*]] = memref.subview %arg2[0, 0]
// CHECK: %[[ANY0:.*]] = memref.cast %[[SLICE0]] : memref<8x8xf32, strided<[8, 1]>> to memref<8x8xf32, strided<[8, 1], offset: ?>>
// CHECK: call @shared_serial0(%[[ANY0]], %arg3)
// CHECK: %[[SLICE1:.*]] = memref.subview %arg2[8, 0]
// CHECK: %[[ANY1:.*]] = memref.cast %[[SLICE1]] : memref<8x8xf32, strided<[8, 1], offset: 64>> to memref<8x8xf32, strided<[8, 1], offset: ?>>
// CHECK: call @shared_serial0(%[[ANY1]], %arg3)
// CHECK-NOT: call
// CHECK: linalg.copy
// CHECK: return
// CHECK: func.func private @shared_serial0(%{{.*}}: memref<8x8xf32, strided<[8, 1], offset: ?>>, %{{.*}}: memref<8x8xf32>)
// CHECK-SAME: attributes {passthrough = ["optsize", "noinline"]}
// CHECK: linalg.generic
// CHECK-NOT: func.func private @shared_serial1
func.func @shared(%x: memref<512x768xf32>, %y: memref<512x768xf32>, %micro: memref<16x8xf32>,
                  %acc: memref<8x8xf32>, %other: memref<4x4xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<512x768xf32>) outs(%y : memref<512x768xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<512x768xf32>) outs(%x : memref<512x768xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  %m0 = memref.subview %micro[0, 0] [8, 8] [1, 1] : memref<16x8xf32> to memref<8x8xf32, strided<[8, 1]>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m0 : memref<8x8xf32, strided<[8, 1]>>) outs(%acc : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.addf %a, %b : f32
    linalg.yield %n : f32
  }
  %m1 = memref.subview %micro[8, 0] [8, 8] [1, 1] : memref<16x8xf32> to memref<8x8xf32, strided<[8, 1], offset: 64>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m1 : memref<8x8xf32, strided<[8, 1], offset: 64>>) outs(%acc : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.addf %a, %b : f32
    linalg.yield %n : f32
  }
  linalg.copy ins(%other : memref<4x4xf32>) outs(%other : memref<4x4xf32>)
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Small ops that differ only in a constant they read are not alike: two
// serial bodies. One on a slice at a static offset that no other op is
// like goes back where it was, with no cast left behind.
// CHECK-LABEL: func.func @constants_differ
// CHECK: call @constants_differ_serial0(%arg0, %arg1)
// CHECK: call @constants_differ_serial1(%arg0, %arg1)
// CHECK: call @constants_differ_serial0(%arg0, %arg1)
// CHECK: call @constants_differ_serial1(%arg0, %arg1)
// CHECK-NOT: memref.cast
// CHECK: %[[SLICE:.*]] = memref.subview %arg2[8, 0]
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[SLICE]] : memref<8x8xf32, strided<[8, 1], offset: 64>>)
// CHECK: return
// CHECK: func.func private @constants_differ_serial0
// CHECK: arith.constant 2.0
// CHECK: func.func private @constants_differ_serial1
// CHECK: arith.constant 3.0
func.func @constants_differ(%x: memref<8x8xf32>, %y: memref<8x8xf32>, %micro: memref<16x8xf32>) {
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %three : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %two : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x8xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %three : f32
    linalg.yield %m : f32
  }
  %m1 = memref.subview %micro[8, 0] [8, 8] [1, 1] : memref<16x8xf32> to memref<8x8xf32, strided<[8, 1], offset: 64>>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m1 : memref<8x8xf32, strided<[8, 1], offset: 64>>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  }
  return
}
