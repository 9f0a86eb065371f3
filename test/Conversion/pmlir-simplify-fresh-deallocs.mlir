// RUN: pmlir-opt %s --pmlir-simplify-fresh-deallocs --split-input-file | FileCheck %s

// A training step's end: two temporaries and a returned scalar, all
// allocated here, retaining the scalar and an argument. The temporaries
// are freed on their own; the scalar is not freed and its ownership is its
// own condition; the argument stays retained (nothing here can be it, but
// it is not fresh).
// CHECK-LABEL: func @step_end
// CHECK-SAME: (%[[ARG:.*]]: memref<4xf32>, %[[C:.*]]: i1)
func.func @step_end(%arg: memref<4xf32>, %c: i1) -> (memref<f32>, i1, i1) {
  %true = arith.constant true
  // CHECK: %[[A:.*]] = memref.alloc() : memref<8xf32>
  // CHECK: %[[B:.*]] = memref.alloc() : memref<16xf32>
  // CHECK: %[[LOSS:.*]] = memref.alloc() : memref<f32>
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<16xf32>
  %loss = memref.alloc() : memref<f32>
  // CHECK: bufferization.dealloc (%[[A]] : memref<8xf32>) if (%true)
  // CHECK-NEXT: bufferization.dealloc (%[[B]] : memref<16xf32>) if (%[[C]])
  // CHECK-NEXT: %[[REST:.*]] = bufferization.dealloc retain (%[[ARG]] : memref<4xf32>)
  // CHECK-NEXT: %[[FALSE:.*]] = arith.constant false
  // CHECK-NEXT: %[[OWNED:.*]] = arith.ori %[[FALSE]], %true
  // CHECK-NEXT: return %[[LOSS]], %[[OWNED]], %[[REST]]
  %r:2 = bufferization.dealloc (%a, %b, %loss : memref<8xf32>, memref<16xf32>, memref<f32>)
      if (%true, %c, %true) retain (%loss, %arg : memref<f32>, memref<4xf32>)
  return %loss, %r#0, %r#1 : memref<f32>, i1, i1
}

// -----

// Buffers seen through views and base buffers are the buffer itself: the
// view of the returned buffer leaves the list with it, the base buffer of
// a temporary is split off.
// CHECK-LABEL: func @through_views
func.func @through_views() -> (memref<?xf32>, i1) {
  %true = arith.constant true
  // CHECK: %[[T:.*]] = memref.alloc() : memref<8xf32>
  // CHECK: %[[R:.*]] = memref.alloc() : memref<8xf32>
  // CHECK: %[[RV:.*]] = memref.cast %[[R]]
  // CHECK: %[[BASE:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[T]]
  %t = memref.alloc() : memref<8xf32>
  %r = memref.alloc() : memref<8xf32>
  %rv = memref.cast %r : memref<8xf32> to memref<?xf32>
  %base, %offset, %size, %stride = memref.extract_strided_metadata %t
      : memref<8xf32> -> memref<f32>, index, index, index
  // CHECK: bufferization.dealloc (%[[BASE]] : memref<f32>) if (%true)
  // CHECK-NOT: bufferization.dealloc
  // CHECK: %[[OWNED:.*]] = arith.ori %{{.*}}, %true
  // CHECK: return %[[RV]], %[[OWNED]]
  %o = bufferization.dealloc (%base, %rv : memref<f32>, memref<?xf32>) if (%true, %true)
      retain (%rv : memref<?xf32>)
  return %rv, %o : memref<?xf32>, i1
}

// -----

// A call to a function whose results are distinct allocations of its own
// makes fresh buffers; a call to one that may return its argument does not.
func.func private @fresh_pair() -> (memref<8xf32>, memref<8xf32>) {
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  return %a, %b : memref<8xf32>, memref<8xf32>
}
func.func private @passes_through(%m: memref<8xf32>) -> memref<8xf32> {
  return %m : memref<8xf32>
}

// CHECK-LABEL: func @calls
func.func @calls() {
  %true = arith.constant true
  // CHECK: %[[P:.*]]:2 = call @fresh_pair()
  %p:2 = call @fresh_pair() : () -> (memref<8xf32>, memref<8xf32>)
  // CHECK: bufferization.dealloc (%[[P]]#0 : memref<8xf32>) if (%true)
  // CHECK-NEXT: bufferization.dealloc (%[[P]]#1 : memref<8xf32>) if (%true)
  // CHECK-NOT: bufferization.dealloc
  bufferization.dealloc (%p#0, %p#1 : memref<8xf32>, memref<8xf32>) if (%true, %true)
  return
}

// The result of @passes_through may be the allocation passed to it: both
// stay together for the upstream simplification.
// CHECK-LABEL: func @call_may_return_its_argument
func.func @call_may_return_its_argument() {
  %true = arith.constant true
  %a = memref.alloc() : memref<8xf32>
  %r = call @passes_through(%a) : (memref<8xf32>) -> memref<8xf32>
  // CHECK: bufferization.dealloc (%{{.*}}, %{{.*}} : memref<8xf32>, memref<8xf32>) if (%true, %true)
  // CHECK-NOT: bufferization.dealloc
  bufferization.dealloc (%a, %r : memref<8xf32>, memref<8xf32>) if (%true, %true)
  return
}

// -----

// A select that may be the allocation, and a retained argument next to a
// memref that is not fresh: nothing is decided.
// CHECK-LABEL: func @undecided
func.func @undecided(%arg: memref<8xf32>, %c: i1) -> (memref<8xf32>, i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<8xf32>
  %s = arith.select %c, %a, %arg : memref<8xf32>
  // CHECK: %[[R:.*]] = bufferization.dealloc (%{{.*}}, %{{.*}} : memref<8xf32>, memref<8xf32>) if (%true, %{{.*}}) retain (%{{.*}} : memref<8xf32>)
  // CHECK-NOT: bufferization.dealloc
  // CHECK: return %{{.*}}, %[[R]]
  %r = bufferization.dealloc (%a, %s : memref<8xf32>, memref<8xf32>) if (%true, %c)
      retain (%s : memref<8xf32>)
  return %s, %r : memref<8xf32>, i1
}

// -----

// An allocation carried into a loop escapes the reckoning: a memref defined
// after it may be it.
// CHECK-LABEL: func @loop_carried
func.func @loop_carried(%n: index) {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<8xf32>
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a) -> memref<8xf32> {
    scf.yield %x : memref<8xf32>
  }
  // CHECK: bufferization.dealloc (%{{.*}}, %{{.*}} : memref<8xf32>, memref<8xf32>) if (%true, %true)
  // CHECK-NOT: bufferization.dealloc
  bufferization.dealloc (%a, %l : memref<8xf32>, memref<8xf32>) if (%true, %true)
  return
}
