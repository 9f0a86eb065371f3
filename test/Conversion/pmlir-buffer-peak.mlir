// RUN: pmlir-opt %s --split-input-file --pmlir-buffer-peak=entry=step | FileCheck %s

// Two forward blocks keep an activation each for two backward blocks. The
// heaviest point is inside the first backward block: the two kept
// activations (2 x 128 B) under its temporary and gradient (512 + 32 B).
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.buffer_peak = {at = "@step: func.call @block_grad ({{.*}}buffer-peak.mlir:{{[0-9]+}}:{{[0-9]+}}) > memref.alloc ({{.*}})",
// CHECK-SAME: by_source = {backward_layers = 0 : i64, entry = 0 : i64, forward_layers = 256 : i64, in_call = 544 : i64},
// CHECK-SAME: largest = [{bytes = 512 : i64, loc = "{{[^"]*}}", type = "memref<128xf32>"},
// CHECK-SAME: {bytes = 128 : i64, loc = "{{[^"]*}}", type = "memref<32xf32>"},
// CHECK-SAME: {bytes = 128 : i64, loc = "{{[^"]*}}", type = "memref<32xf32>"},
// CHECK-SAME: {bytes = 32 : i64, loc = "{{[^"]*}}", type = "memref<8xf32>"}],
// CHECK-SAME: peak_bytes = 800 : i64, result_bytes = 32 : i64}
func.func private @block(%x: memref<16xf32>) -> (memref<16xf32>, memref<32xf32>)
    attributes {tfm.forward_layer} {
  %t = memref.alloc() : memref<64xf32>
  %y = memref.alloc() : memref<16xf32>
  %k = memref.alloc() : memref<32xf32>
  memref.dealloc %t : memref<64xf32>
  return %y, %k : memref<16xf32>, memref<32xf32>
}
func.func private @block_grad(%k: memref<32xf32>) -> memref<8xf32>
    attributes {tfm.backward_layer} {
  %t = memref.alloc() : memref<128xf32>
  %g = memref.alloc() : memref<8xf32>
  memref.dealloc %t : memref<128xf32>
  return %g : memref<8xf32>
}
func.func @step(%x: memref<16xf32>) -> memref<8xf32> {
  %e = memref.alloc() : memref<16xf32>
  %y0:2 = call @block(%e) : (memref<16xf32>) -> (memref<16xf32>, memref<32xf32>)
  memref.dealloc %e : memref<16xf32>
  %y1:2 = call @block(%y0#0) : (memref<16xf32>) -> (memref<16xf32>, memref<32xf32>)
  memref.dealloc %y0#0 : memref<16xf32>
  memref.dealloc %y1#0 : memref<16xf32>
  %g1 = call @block_grad(%y1#1) : (memref<32xf32>) -> memref<8xf32>
  memref.dealloc %y1#1 : memref<32xf32>
  %g0 = call @block_grad(%y0#1) : (memref<32xf32>) -> memref<8xf32>
  memref.dealloc %y0#1 : memref<32xf32>
  memref.dealloc %g0 : memref<8xf32>
  return %g1 : memref<8xf32>
}

// -----

// The heavier branch of an if counts; a buffer freed through a view of it
// is freed; a loop that keeps a buffer each iteration keeps all of them.
// CHECK-LABEL: module attributes
// CHECK-SAME: by_source = {backward_layers = 0 : i64, entry = 480 : i64, forward_layers = 0 : i64, in_call = 0 : i64}
// CHECK-SAME: largest = [{bytes = 480 : i64, loc = "{{[^"]*}}", type = "3 x memref<40xf32>"}]
// CHECK-SAME: peak_bytes = 480 : i64, result_bytes = 480 : i64
func.func @step(%c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.if %c {
    %a = memref.alloc() : memref<100xf32>
    memref.dealloc %a : memref<100xf32>
  } else {
    %b = memref.alloc() : memref<10xf32>
    memref.dealloc %b : memref<10xf32>
  }
  %m = memref.alloc() : memref<8x8xf32>
  %v = memref.collapse_shape %m [[0, 1]] : memref<8x8xf32> into memref<64xf32>
  memref.dealloc %v : memref<64xf32>
  scf.for %i = %c0 to %c3 step %c1 {
    %kept = memref.alloc() : memref<40xf32>
  }
  return
}

// -----

// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.buffer_peak = {error = "the buffer of memref.alloc at {{.*}}buffer-peak.mlir:{{[0-9]+}}:{{[0-9]+}} has a dynamic shape (memref<?xf32>): its bytes are not known before the run"}
func.func @step(%n: index) {
  %a = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %a : memref<?xf32>
  return
}

// -----

// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.buffer_peak = {error = "@step calls itself"}
func.func @step() {
  call @step() : () -> ()
  return
}

// -----

// A loop whose iterations are not known before the run.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.buffer_peak = {error = "scf.for at {{.*}} keeps buffers over a number of iterations not known before the run"}
func.func @step(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %kept = memref.alloc() : memref<4xf32>
  }
  return
}

// -----

// A module without the entry is left alone.
// CHECK-LABEL: module {
// CHECK-NOT: tfm.buffer_peak
func.func @other() {
  return
}
