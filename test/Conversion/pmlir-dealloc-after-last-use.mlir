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
