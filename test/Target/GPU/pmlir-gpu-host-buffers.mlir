// RUN: pmlir-opt %s --split-input-file --verify-diagnostics --pmlir-gpu-host-buffers | FileCheck %s

// Buffers are allocated and freed on the device and every GPU op is
// ordered on one token chain (the rank's stream); the entry function waits
// for it before it returns, a function it calls does not.
// CHECK-LABEL: func.func @forward
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[A:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] () : memref<8xf32>
// CHECK: %[[T2:.*]] = gpu.launch_func async [%[[T1]]] @kernels::@scale
// CHECK: %[[B:.*]], %[[T3:.*]] = gpu.alloc async [%[[T2]]] () : memref<8xf32>
// CHECK: call @layer(%[[B]])
// CHECK: %[[T4:.*]] = gpu.dealloc async [%[[T3]]] %[[A]] : memref<8xf32>
// CHECK: gpu.wait [%[[T4]]]
// CHECK-NEXT: return %[[B]]
// CHECK-LABEL: func.func @layer
// CHECK: gpu.launch_func async
// CHECK-NOT: gpu.wait [
// CHECK: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%a: memref<8xf32>) kernel {
      gpu.return
    }
  }
  func.func @forward(%x: memref<8xf32>) -> memref<8xf32> {
    %c1 = arith.constant 1 : index
    %a = memref.alloc() : memref<8xf32>
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    %b = memref.alloc() : memref<8xf32>
    call @layer(%b) : (memref<8xf32>) -> ()
    memref.dealloc %a : memref<8xf32>
    return %b : memref<8xf32>
  }
  func.func @layer(%y: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%y : memref<8xf32>)
    return
  }
}

// -----

// A constant of the program is copied to the device for the call.
// CHECK-LABEL: func.func @forward
// CHECK: %[[G:.*]] = memref.get_global @table : memref<4xf32>
// CHECK: %[[D:.*]], %[[T:.*]] = gpu.alloc async
// CHECK: gpu.memcpy async [%[[T]]] %[[D]], %[[G]]
// CHECK: gpu.launch_func async {{.*}} args(%[[D]] : memref<4xf32>)
// CHECK: gpu.dealloc async {{.*}} %[[D]]
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
  gpu.module @kernels {
    gpu.func @read(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @forward() {
    %c1 = arith.constant 1 : index
    %t = memref.get_global @table : memref<4xf32>
    gpu.launch_func @kernels::@read blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%t : memref<4xf32>)
    return
  }
}

// -----

// The mesh axes a runtime entry takes (AXES in RuntimeAbi.def) are read by
// the runtime on the host: they stay there, while the same constant read by
// a kernel gets its device copy.
// CHECK-LABEL: func.func @forward
// CHECK: %[[G:.*]] = memref.get_global @axes : memref<1xi64>
// CHECK-NOT: gpu.alloc
// CHECK: %[[C:.*]] = memref.cast %[[G]] : memref<1xi64> to memref<?xi64>
// CHECK-NOT: gpu.alloc
// CHECK: call @pmlir_rt_all_reduce_f32(%{{.*}}, %{{.*}}, %[[C]], %{{.*}})
// CHECK-LABEL: func.func @both
// CHECK: %[[G:.*]] = memref.get_global @axes : memref<1xi64>
// CHECK: %[[D:.*]], %[[T:.*]] = gpu.alloc async
// CHECK: gpu.memcpy async [%[[T]]] %[[D]], %[[G]]
// CHECK: %[[C:.*]] = memref.cast %[[G]] : memref<1xi64> to memref<?xi64>
// CHECK: call @pmlir_rt_index_in_group(%[[C]])
// CHECK: gpu.launch_func async {{.*}} args(%[[D]] : memref<1xi64>)
module attributes {gpu.container_module} {
  memref.global "private" constant @axes : memref<1xi64> = dense<[0]>
  func.func private @pmlir_rt_all_reduce_f32(memref<?xf32>, memref<?xf32>, memref<?xi64>, i32)
  func.func private @pmlir_rt_index_in_group(memref<?xi64>) -> i64
  gpu.module @kernels {
    gpu.func @read(%a: memref<1xi64>) kernel {
      gpu.return
    }
  }
  func.func @forward(%x: memref<?xf32>, %y: memref<?xf32>) {
    %code = arith.constant 0 : i32
    %a = memref.get_global @axes : memref<1xi64>
    %axes = memref.cast %a : memref<1xi64> to memref<?xi64>
    call @pmlir_rt_all_reduce_f32(%x, %y, %axes, %code) : (memref<?xf32>, memref<?xf32>, memref<?xi64>, i32) -> ()
    return
  }
  func.func @both() -> i64 {
    %c1 = arith.constant 1 : index
    %a = memref.get_global @axes : memref<1xi64>
    %axes = memref.cast %a : memref<1xi64> to memref<?xi64>
    %i = call @pmlir_rt_index_in_group(%axes) : (memref<?xi64>) -> i64
    gpu.launch_func @kernels::@read blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<1xi64>)
    return %i : i64
  }
}

// -----

// Host work left on device memory has no GPU lowering.
func.func @forward(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 1.0 : f32
  // expected-error @+1 {{'memref.store' op has no GPU lowering: it would read or write device memory on the host}}
  memref.store %v, %x[%c0] : memref<8xf32>
  return
}

// -----

// A copy the host reads (staged by pmlir-gpu-wrap-sequential-work) goes on
// the chain, and the host waits for it before the read.
// CHECK-LABEL: func.func @staged
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK: %[[T1:.*]] = gpu.memcpy async [%[[T0]]] %[[HOST:.*]], %{{.*}} : memref<3xi64>, memref<3xi64>
// CHECK-NEXT: gpu.wait [%[[T1]]]
// CHECK-NEXT: memref.load %[[HOST]]
module attributes {gpu.container_module} {
  func.func @staged(%counts: memref<3xi64>) -> i64 {
    %c1 = arith.constant 1 : index
    %host = memref.alloca() : memref<3xi64>
    gpu.memcpy %host, %counts : memref<3xi64>, memref<3xi64>
    %n = memref.load %host[%c1] : memref<3xi64>
    return %n : i64
  }
}
