// RUN: pmlir-opt %s --split-input-file --pmlir-lower-deallocations | FileCheck %s

// Two memrefs and a retained one, as an scf.if choosing between buffers
// leaves them: every pointer read first; %a freed unless it is %r; %b
// freed where its condition holds and it is neither %r nor %a; %r's
// ownership from the memrefs it is. No buffers, no helper function.
// CHECK-LABEL: func.func @two_and_retained
// CHECK-SAME:    (%[[A:.*]]: memref<8xf32>, %[[B:.*]]: memref<f32>, %[[C:.*]]: i1, %[[R:.*]]: memref<8xf32>)
// CHECK-DAG:     %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK-DAG:     %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
// CHECK-DAG:     %[[PR:.*]] = memref.extract_aligned_pointer_as_index %[[R]]
// CHECK-DAG:     %[[TRUE:.*]] = arith.constant true
// CHECK-DAG:     %[[FALSE:.*]] = arith.constant false
// CHECK:         %[[ANOTR:.*]] = arith.cmpi ne, %[[PA]], %[[PR]]
// CHECK:         %[[AISR:.*]] = arith.cmpi eq, %[[PA]], %[[PR]]
// CHECK:         %[[AOWN:.*]] = arith.andi %[[AISR]], %[[TRUE]]
// CHECK:         %[[OWN0:.*]] = arith.ori %[[FALSE]], %[[AOWN]]
// CHECK:         %[[FREEA:.*]] = arith.andi %[[TRUE]], %[[ANOTR]]
// CHECK:         scf.if %[[FREEA]] {
// CHECK-NEXT:      memref.dealloc %[[A]] : memref<8xf32>
// CHECK:         %[[BNOTR:.*]] = arith.cmpi ne, %[[PB]], %[[PR]]
// CHECK:         %[[BISR:.*]] = arith.cmpi eq, %[[PB]], %[[PR]]
// CHECK:         %[[BOWN:.*]] = arith.andi %[[BISR]], %[[C]]
// CHECK:         %[[OWN:.*]] = arith.ori %[[OWN0]], %[[BOWN]]
// CHECK:         %[[F1:.*]] = arith.andi %[[C]], %[[BNOTR]]
// CHECK:         %[[BNOTA:.*]] = arith.cmpi ne, %[[PB]], %[[PA]]
// CHECK:         %[[F2:.*]] = arith.andi %[[F1]], %[[BNOTA]]
// CHECK:         scf.if %[[F2]] {
// CHECK-NEXT:      memref.dealloc %[[B]] : memref<f32>
// CHECK:         return %[[OWN]]
// CHECK-NOT:   dealloc_helper
func.func @two_and_retained(%a: memref<8xf32>, %b: memref<f32>, %c: i1, %r: memref<8xf32>) -> i1 {
  %true = arith.constant true
  %own = bufferization.dealloc (%a, %b : memref<8xf32>, memref<f32>) if (%true, %c)
      retain (%r : memref<8xf32>)
  return %own : i1
}

// -----

// One memref, nothing retained: a guarded free.
// CHECK-LABEL: func.func @one
// CHECK:         scf.if %{{.*}} {
// CHECK-NEXT:      memref.dealloc %{{.*}} : memref<4xf32>
func.func @one(%a: memref<4xf32>, %c: i1) {
  bufferization.dealloc (%a : memref<4xf32>) if (%c)
  return
}

// -----

// Nothing to free: each retained memref owns nothing.
// CHECK-LABEL: func.func @none
// CHECK:         %[[FALSE:.*]] = arith.constant false
// CHECK:         return %[[FALSE]]
func.func @none(%r: memref<4xf32>) -> i1 {
  %own = bufferization.dealloc retain (%r : memref<4xf32>)
  return %own : i1
}
