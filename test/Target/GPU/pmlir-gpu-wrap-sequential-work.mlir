// RUN: pmlir-opt %s --split-input-file --verify-diagnostics --pmlir-gpu-wrap-sequential-work | FileCheck %s

// A sequential reduction to a scalar (a mean) and the store before it
// become one one-iteration parallel loop (a one-thread kernel); the parallel
// loop after them, the allocation and the call stay as they are.
// CHECK-LABEL: func.func @sum
// CHECK: %[[TMP:.*]] = memref.alloc()
// CHECK-NEXT: call @gemm(%[[TMP]])
// CHECK: scf.parallel (%{{.*}}) = (%[[C0:.*]]) to (%[[C1:.*]]) step (%[[C1]]) {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK-NEXT: scf.for
// CHECK: scf.reduce
// CHECK-NEXT: }
// CHECK-NEXT: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c16) step
// CHECK: memref.dealloc %[[TMP]]
func.func private @gemm(memref<16xf32>)
func.func @sum(%x: memref<16xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %tmp = memref.alloc() : memref<16xf32>
  func.call @gemm(%tmp) : (memref<16xf32>) -> ()
  memref.store %zero, %out[] : memref<f32>
  scf.for %i = %c0 to %c16 step %c1 {
    %acc = memref.load %out[] : memref<f32>
    %v = memref.load %x[%i] : memref<16xf32>
    %s = arith.addf %acc, %v : f32
    memref.store %s, %out[] : memref<f32>
  }
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %zero, %tmp[%i] : memref<16xf32>
    scf.reduce
  }
  memref.dealloc %tmp : memref<16xf32>
  return
}

// -----

// A scalar read the host itself uses cannot move into a kernel: it reads a
// copy on the host, made right before it.
// CHECK-LABEL: func.func @host_uses_read
// CHECK-NEXT: %[[HOST:.*]] = memref.alloca() : memref<f32>
// CHECK-NEXT: gpu.memcpy %[[HOST]], %{{.*}} : memref<f32>, memref<f32>
// CHECK-NEXT: %[[V:.*]] = memref.load %[[HOST]][] : memref<f32>
// CHECK-NEXT: return %[[V]]
func.func @host_uses_read(%x: memref<f32>) -> f32 {
  %v = memref.load %x[] : memref<f32>
  return %v : f32
}

// -----

// The rows of each expert's GEMM, read by the host's loop over experts
// (tfm.grouped_matmul's lowering): the counts are copied to the host once,
// before the loop, which does not write them; the GEMM calls stay.
// CHECK-LABEL: func.func @grouped
// CHECK-NEXT: %[[HOST:.*]] = memref.alloca() : memref<3xi64>
// CHECK: gpu.memcpy %[[HOST]], %{{.*}} : memref<3xi64>, memref<3xi64>
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.load %[[HOST]][%{{.*}}] : memref<3xi64>
// CHECK: call @gemm
// CHECK-NOT: scf.parallel
func.func private @gemm(memref<?x16xf32, strided<[16, 1], offset: ?>>)
func.func @grouped(%x: memref<13x16xf32>, %counts: memref<3xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %end = scf.for %e = %c0 to %c3 step %c1 iter_args(%start = %c0) -> (index) {
    %n = memref.load %counts[%e] : memref<3xi64>
    %rows = arith.index_cast %n : i64 to index
    %view = memref.subview %x[%start, 0] [%rows, 16] [1, 1] : memref<13x16xf32> to memref<?x16xf32, strided<[16, 1], offset: ?>>
    func.call @gemm(%view) : (memref<?x16xf32, strided<[16, 1], offset: ?>>) -> ()
    %next = arith.addi %start, %rows : index
    scf.yield %next : index
  }
  return
}

// -----

// Two loops over the same counts (a layer's grouped GEMMs) share one copy;
// after a call that may write them, the next loop copies them again.
// CHECK-LABEL: func.func @two_loops
// CHECK: gpu.memcpy %[[HOST:.*]], %{{.*}} : memref<3xi64>, memref<3xi64>
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[HOST]]
// CHECK-NOT: gpu.memcpy
// CHECK: scf.for
// CHECK: memref.load %[[HOST]]
// CHECK: call @update
// CHECK-NEXT: gpu.memcpy %[[AGAIN:.*]], %{{.*}} : memref<3xi64>, memref<3xi64>
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[AGAIN]]
func.func private @use(index)
func.func private @update(memref<3xi64>)
func.func @two_loops(%counts: memref<3xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %e = %c0 to %c3 step %c1 {
    %n = memref.load %counts[%e] : memref<3xi64>
    %i = arith.index_cast %n : i64 to index
    func.call @use(%i) : (index) -> ()
  }
  scf.for %e = %c0 to %c3 step %c1 {
    %n = memref.load %counts[%e] : memref<3xi64>
    %i = arith.index_cast %n : i64 to index
    func.call @use(%i) : (index) -> ()
  }
  func.call @update(%counts) : (memref<3xi64>) -> ()
  scf.for %e = %c0 to %c3 step %c1 {
    %n = memref.load %counts[%e] : memref<3xi64>
    %i = arith.index_cast %n : i64 to index
    func.call @use(%i) : (index) -> ()
  }
  return
}

// -----

// A loop that writes the buffer it reads (here through a call handed it)
// copies it before each read.
// CHECK-LABEL: func.func @written
// CHECK: scf.for
// CHECK-NEXT: gpu.memcpy
// CHECK-NEXT: memref.load
func.func private @update(memref<3xi64>)
func.func @written(%counts: memref<3xi64>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %sum = scf.for %e = %c0 to %c3 step %c1 iter_args(%acc = %c0) -> (index) {
    %n = memref.load %counts[%e] : memref<3xi64>
    %i = arith.index_cast %n : i64 to index
    func.call @update(%counts) : (memref<3xi64>) -> ()
    %next = arith.addi %acc, %i : index
    scf.yield %next : index
  }
  return %sum : index
}

// -----

// A buffer of dynamic shape is not copied: the read has no GPU lowering.
func.func @dynamic(%x: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.load' op has no GPU lowering: it reads device memory on the host, which uses its result}}
  %v = memref.load %x[%c0] : memref<?xf32>
  return %v : f32
}
