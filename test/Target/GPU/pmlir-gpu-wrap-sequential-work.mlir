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

// A scalar read the host itself uses cannot move into a kernel.
func.func @host_uses_read(%x: memref<f32>) -> f32 {
  // expected-error @+1 {{'memref.load' op has no GPU lowering: it reads device memory on the host, which uses its result}}
  %v = memref.load %x[] : memref<f32>
  return %v : f32
}
