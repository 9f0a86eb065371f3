// RUN: pmlir-opt %s --pmlir-dealloc-after-last-use | FileCheck %s

func.func private @use(memref<?xf32>)

// %a dies after its view's last use, %b after the loop that reads it; %c is
// returned and keeps no dealloc; a dealloc of a buffer from another block
// stays where it is.
// CHECK-LABEL: func @frees_follow_last_uses
func.func @frees_follow_last_uses(%n: index, %arg: memref<8xf32>) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  // CHECK: %[[A:.*]] = memref.alloc()
  // CHECK-NEXT: %[[B:.*]] = memref.alloc()
  // CHECK-NEXT: %[[C:.*]] = memref.alloc()
  // CHECK-NEXT: %[[V:.*]] = memref.cast %[[A]]
  // CHECK-NEXT: call @use(%[[V]])
  // CHECK-NEXT: memref.dealloc %[[A]]
  // CHECK-NEXT: scf.for
  // CHECK-NEXT:   memref.store %{{.*}}, %[[B]]
  // CHECK-NEXT: }
  // CHECK-NEXT: memref.dealloc %[[B]]
  // CHECK-NEXT: memref.store %{{.*}}, %[[C]]
  // CHECK-NEXT: memref.dealloc %arg1
  // CHECK-NEXT: return %[[C]]
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  %c = memref.alloc() : memref<8xf32>
  %v = memref.cast %a : memref<8xf32> to memref<?xf32>
  call @use(%v) : (memref<?xf32>) -> ()
  scf.for %i = %c0 to %n step %c1 {
    memref.store %f, %b[%c0] : memref<8xf32>
  }
  memref.store %f, %c[%c0] : memref<8xf32>
  memref.dealloc %a : memref<8xf32>
  memref.dealloc %b : memref<8xf32>
  memref.dealloc %arg : memref<8xf32>
  return %c : memref<8xf32>
}

// A buffer a call returns is the caller's to free: it dies after the call
// that reads it last (a block's activations after its backward pass), not
// at the end of the caller.
func.func private @block(memref<8xf32>) -> memref<8xf32>
func.func private @block_grad(memref<8xf32>) -> memref<4xf32>
func.func private @shrink(memref<4xf32>) -> memref<2xf32>
// CHECK-LABEL: func @call_results_freed_after_last_use
func.func @call_results_freed_after_last_use(%x: memref<8xf32>) -> memref<4xf32> {
  // CHECK: %[[ACT:.*]] = call @block(
  // CHECK-NEXT: %[[G1:.*]] = call @block_grad(%[[ACT]])
  // CHECK-NEXT: %[[G2:.*]] = call @shrink(%[[G1]])
  // CHECK-NEXT: memref.dealloc %[[G2]]
  // CHECK-NEXT: memref.dealloc %[[G1]]
  // CHECK-NEXT: %[[G3:.*]] = call @block_grad(%[[ACT]])
  // CHECK-NEXT: memref.dealloc %[[ACT]]
  // CHECK-NEXT: return %[[G3]]
  %act = call @block(%x) : (memref<8xf32>) -> memref<8xf32>
  %g1 = call @block_grad(%act) : (memref<8xf32>) -> memref<4xf32>
  %g2 = call @shrink(%g1) : (memref<4xf32>) -> memref<2xf32>
  %g3 = call @block_grad(%act) : (memref<8xf32>) -> memref<4xf32>
  memref.dealloc %act : memref<8xf32>
  memref.dealloc %g1 : memref<4xf32>
  memref.dealloc %g2 : memref<2xf32>
  return %g3 : memref<4xf32>
}

// Ownership-based deallocation frees a call's result through its base
// buffer: the extraction moves with the free.
// CHECK-LABEL: func @call_result_freed_through_its_base
func.func @call_result_freed_through_its_base(%x: memref<8xf32>) -> memref<4xf32> {
  // CHECK: %[[ACT:.*]] = call @block(
  // CHECK-NEXT: %[[G:.*]] = call @block_grad(%[[ACT]])
  // CHECK-NEXT: %[[BASE:.*]], %{{.*}}, %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[ACT]]
  // CHECK-NEXT: memref.dealloc %[[BASE]]
  // CHECK-NEXT: memref.alloc
  // CHECK-NEXT: call @block_grad(
  %act = call @block(%x) : (memref<8xf32>) -> memref<8xf32>
  %g = call @block_grad(%act) : (memref<8xf32>) -> memref<4xf32>
  %other = memref.alloc() : memref<8xf32>
  %g2 = call @block_grad(%other) : (memref<8xf32>) -> memref<4xf32>
  memref.dealloc %other : memref<8xf32>
  %base, %offset, %size, %stride = memref.extract_strided_metadata %act : memref<8xf32> -> memref<f32>, index, index, index
  memref.dealloc %base : memref<f32>
  memref.dealloc %g2 : memref<4xf32>
  return %g : memref<4xf32>
}
