// RUN: pmlir-opt %s --split-input-file --pmlir-step-work=entry=step | FileCheck %s

// A block called twice: its GEMM (64x32 by 32x16) and its loop (64x16
// elements, one add each: 4096 + 64 + 4096 bytes of operands, 1024
// operations, on one thread) twice in the first segment; then an
// all-reduce over mesh axis 1 of the 64x16 f32 result (4096 bytes, seen
// through the cast the lowering makes); then a send to peer 1 with tag 7
// over axis 0 and a copy of 256 bytes after it, three times in a loop. A
// communication: [1, kind, bytes, peer, tag, grouped with the next, axes].
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.step_work = {events = [
// CHECK-SAME: array<i64: 0, 0, 0, 16512, 2048, 0, 2, 0, 2>,
// CHECK-SAME: array<i64: 1, 0, 4096, -1, -1, 0, 1>,
// CHECK-SAME: array<i64: 1, 6, 4096, 1, 7, 0, 0>,
// CHECK-SAME: array<i64: 0, 0, 0, 0, 0, 256, 0>,
// CHECK-SAME: array<i64: 1, 6, 4096, 1, 7, 0, 0>,
// CHECK-SAME: array<i64: 0, 0, 0, 0, 0, 256, 0>,
// CHECK-SAME: array<i64: 1, 6, 4096, 1, 7, 0, 0>,
// CHECK-SAME: array<i64: 0, 0, 0, 0, 0, 256, 0>],
// CHECK-SAME: gemms = [{kernel = "pmlir_matmul_f32_r22_t00", lhs = array<i64: 64, 32>, out = array<i64: 64, 16>, rhs = array<i64: 32, 16>}]}
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (j)>
#lhs = affine_map<(i, j, k) -> (i, k)>
#rhs = affine_map<(i, j, k) -> (k, j)>
#out = affine_map<(i, j, k) -> (i, j)>
memref.global "private" constant @axes_0 : memref<1xi64> = dense<0>
memref.global "private" constant @axes_1 : memref<1xi64> = dense<1>
func.func private @pmlir_rt_all_reduce_f32(memref<?xf32>, memref<?xf32>, memref<?xi64>, i32)
func.func private @pmlir_rt_send_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func private @block(%x: memref<64x32xf32>, %w: memref<32x16xf32>, %b: memref<16xf32>,
                         %y: memref<64x16xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #out],
                  iterator_types = ["parallel", "parallel", "reduction"],
                  library_call = "pmlir_matmul_f32_r22_t00"}
      ins(%x, %w : memref<64x32xf32>, memref<32x16xf32>) outs(%y : memref<64x16xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y, %b : memref<64x16xf32>, memref<16xf32>) outs(%y : memref<64x16xf32>) {
  ^bb0(%v: f32, %bias: f32, %o: f32):
    %s = arith.addf %v, %bias : f32
    linalg.yield %s : f32
  }
  return
}
func.func @step(%x: memref<64x32xf32>, %w: memref<32x16xf32>, %b: memref<16xf32>,
                %y: memref<64x16xf32>, %r: memref<1024xf32>, %small: memref<64xf32>,
                %to: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %sum = arith.constant 0 : i32
  %peer = arith.constant 1 : i64
  %tag = arith.constant 7 : i64
  call @block(%x, %w, %b, %y) : (memref<64x32xf32>, memref<32x16xf32>, memref<16xf32>, memref<64x16xf32>) -> ()
  call @block(%x, %w, %b, %y) : (memref<64x32xf32>, memref<32x16xf32>, memref<16xf32>, memref<64x16xf32>) -> ()
  %flat = memref.collapse_shape %y [[0, 1]] : memref<64x16xf32> into memref<1024xf32>
  %in = memref.cast %flat : memref<1024xf32> to memref<?xf32>
  %out = memref.cast %r : memref<1024xf32> to memref<?xf32>
  %g1 = memref.get_global @axes_1 : memref<1xi64>
  %a1 = memref.cast %g1 : memref<1xi64> to memref<?xi64>
  call @pmlir_rt_all_reduce_f32(%in, %out, %a1, %sum) : (memref<?xf32>, memref<?xf32>, memref<?xi64>, i32) -> ()
  %g0 = memref.get_global @axes_0 : memref<1xi64>
  %a0 = memref.cast %g0 : memref<1xi64> to memref<?xi64>
  scf.for %i = %c0 to %c3 step %c1 {
    func.call @pmlir_rt_send_f32(%out, %a0, %peer, %tag) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
    memref.copy %small, %to : memref<64xf32> to memref<64xf32>
  }
  return
}

// -----

// A loop of an unknown trip count.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.step_work = {error = "scf.for at {{.*}}step-work.mlir:{{[0-9]+}}:{{[0-9]+}} runs a number of iterations not known before the run"}
func.func @step(%n: index, %a: memref<8xf32>, %b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    memref.copy %a, %b : memref<8xf32> to memref<8xf32>
  }
  return
}

// -----

// Axes that are no constant.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.step_work = {error = "the axes of pmlir_rt_all_reduce_f32 at {{.*}} are no constant"}
func.func private @pmlir_rt_all_reduce_f32(memref<?xf32>, memref<?xf32>, memref<?xi64>, i32)
func.func @step(%x: memref<4xf32>, %y: memref<4xf32>, %axes: memref<?xi64>) {
  %sum = arith.constant 0 : i32
  %a = memref.cast %x : memref<4xf32> to memref<?xf32>
  %b = memref.cast %y : memref<4xf32> to memref<?xf32>
  call @pmlir_rt_all_reduce_f32(%a, %b, %axes, %sum) : (memref<?xf32>, memref<?xf32>, memref<?xi64>, i32) -> ()
  return
}

// -----

// A loop nest over a dynamic shape.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.step_work = {error = "linalg.generic at {{.*}} works on a dynamic shape: its work is not known before the run"}
#id1 = affine_map<(i) -> (i)>
func.func @step(%a: memref<?xf32>) {
  linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]} outs(%a : memref<?xf32>) {
  ^bb0(%o: f32):
    %s = arith.addf %o, %o : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// After the GPU pipeline has made its kernels: a call of a GEMM kernel (its
// shapes seen through the casts) is a GEMM; a kernel launch one loop, its
// buffers' bytes (64 x 16 f32 and bf16: 4096 + 2048) and their elements
// (2 x 1024) as its operations.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.step_work = {events = [array<i64: 0, 6144, 2048, 0, 0, 0, 1, 0, 1>],
// CHECK-SAME: gemms = [{kernel = "pmlir_gpu_matmul_bf16_r22_t00", lhs = array<i64: 64, 32>, out = array<i64: 64, 16>, rhs = array<i64: 32, 16>}]}
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%a: memref<64x16xf32>, %b: memref<64x16xbf16>) kernel {
      gpu.return
    }
  }
  func.func private @pmlir_gpu_matmul_bf16_r22_t00(memref<?x?xbf16, strided<[?, ?], offset: ?>>,
      memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, i1)
  func.func @step(%x: memref<64x32xbf16>, %w: memref<32x16xbf16>, %y: memref<64x16xbf16>,
                  %f: memref<64x16xf32>) {
    %c1 = arith.constant 1 : index
    %false = arith.constant false
    %cx = memref.cast %x : memref<64x32xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
    %cw = memref.cast %w : memref<32x16xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
    %cy = memref.cast %y : memref<64x16xbf16> to memref<?x?xbf16, strided<[?, ?], offset: ?>>
    call @pmlir_gpu_matmul_bf16_r22_t00(%cx, %cw, %cy, %false)
        : (memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>,
           memref<?x?xbf16, strided<[?, ?], offset: ?>>, i1) -> ()
    gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%f : memref<64x16xf32>, %y : memref<64x16xbf16>)
    return
  }
}

// -----

// A ring's neighbour, computed from the rank's coordinate: on rank 1 of
// cp=2 the send goes to (1 + 1) mod 2 = 0.
// RUN: pmlir-opt %s --split-input-file --pmlir-step-work="entry=step rank=1" | FileCheck %s --check-prefix=RANK
// RANK: tfm.step_work = {events = [array<i64: 1, 6, 32, 0, 3, 0, 0>]
// Without a rank, the peer is not known.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.step_work = {error = "the peer or tag of pmlir_rt_send_f32 at {{.*}} is neither a constant nor computed from the rank's coordinates (no rank given)"}
module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {
  memref.global "private" constant @axes_0 : memref<1xi64> = dense<0>
  func.func private @pmlir_rt_coordinate(i64) -> i64
  func.func private @pmlir_rt_send_f32(memref<?xf32>, memref<?xi64>, i64, i64)
  func.func @step(%x: memref<8xf32>) {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %tag = arith.constant 3 : i64
    %me = call @pmlir_rt_coordinate(%c0) : (i64) -> i64
    %i = arith.index_cast %me : i64 to index
    %next = arith.addi %i, %c1 : index
    %wrapped = arith.remui %next, %c2 : index
    %peer = arith.index_cast %wrapped : index to i64
    %buffer = memref.cast %x : memref<8xf32> to memref<?xf32>
    %g = memref.get_global @axes_0 : memref<1xi64>
    %axes = memref.cast %g : memref<1xi64> to memref<?xi64>
    call @pmlir_rt_send_f32(%buffer, %axes, %peer, %tag) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
    return
  }
}

// -----

// A message group of two (pmlir-group-messages): the send is issued with the
// receive after it, the receive is the group's last; the lone send after
// them is in no group.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.step_work = {events = [array<i64: 1, 6, 32, 1, 5, 1, 0>, array<i64: 1, 7, 32, 1, 6, 0, 0>, array<i64: 1, 6, 32, 1, 8, 0, 0>]
module attributes {tfm.mesh = #tfm.mesh<pp = 2>} {
  memref.global "private" constant @axes_0 : memref<1xi64> = dense<0>
  func.func private @pmlir_rt_message_group(i64)
  func.func private @pmlir_rt_send_f32(memref<?xf32>, memref<?xi64>, i64, i64)
  func.func private @pmlir_rt_recv_f32(memref<?xf32>, memref<?xi64>, i64, i64)
  func.func @step(%x: memref<8xf32>, %y: memref<8xf32>) {
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %c5 = arith.constant 5 : i64
    %c6 = arith.constant 6 : i64
    %c8 = arith.constant 8 : i64
    %sent = memref.cast %x : memref<8xf32> to memref<?xf32>
    %received = memref.cast %y : memref<8xf32> to memref<?xf32>
    %g = memref.get_global @axes_0 : memref<1xi64>
    %axes = memref.cast %g : memref<1xi64> to memref<?xi64>
    call @pmlir_rt_message_group(%c2) : (i64) -> ()
    call @pmlir_rt_send_f32(%sent, %axes, %c1, %c5) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
    call @pmlir_rt_recv_f32(%received, %axes, %c1, %c6) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
    call @pmlir_rt_send_f32(%sent, %axes, %c1, %c8) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
    return
  }
}
