// RUN: pmlir-opt %s --split-input-file --pmlir-group-messages | FileCheck %s

// A pipeline stage's steady state: the activation sent forward, its buffer
// freed, the gradient's buffer allocated and received. One group of two;
// the free moves after the receive, as the runtime holds the sent buffer
// until the group's last call. After a fill, which ends the run, a second
// group of three uses the same declaration.
// CHECK-LABEL: func.func @steady
// CHECK:         %[[N:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    call @pmlir_rt_message_group(%[[N]]) : (i64) -> ()
// CHECK-NEXT:    call @pmlir_rt_send_f32
// CHECK-NEXT:    %[[G:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    %[[GC:.*]] = memref.cast %[[G]]
// CHECK-NEXT:    call @pmlir_rt_recv_f32(%[[GC]]
// CHECK-NEXT:    memref.dealloc %[[A:.*]] : memref<8xf32>
// CHECK:         linalg.fill
// CHECK:         %[[M:.*]] = arith.constant 3 : i64
// CHECK-NEXT:    call @pmlir_rt_message_group(%[[M]])
// CHECK-NEXT:    call @pmlir_rt_recv_f32
// CHECK-NEXT:    call @pmlir_rt_send_f32
// CHECK-NEXT:    call @pmlir_rt_send_f32
// CHECK-NEXT:    memref.dealloc
// CHECK-NEXT:    return
// CHECK:       func.func private @pmlir_rt_message_group(i64)
// CHECK-NOT:   @pmlir_rt_message_group(i64)
memref.global "private" constant @axes_0 : memref<1xi64> = dense<0>
func.func private @pmlir_rt_send_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func private @pmlir_rt_recv_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func @steady(%a: memref<8xf32>) -> memref<8xf32> {
  %c1 = arith.constant 1 : i64
  %c3 = arith.constant 3 : i64
  %g0 = memref.get_global @axes_0 : memref<1xi64>
  %axes = memref.cast %g0 : memref<1xi64> to memref<?xi64>
  %ac = memref.cast %a : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_send_f32(%ac, %axes, %c1, %c3) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  memref.dealloc %a : memref<8xf32>
  %g = memref.alloc() : memref<8xf32>
  %gc = memref.cast %g : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_recv_f32(%gc, %axes, %c1, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%g : memref<8xf32>)
  %c4 = arith.constant 4 : i64
  %h = memref.alloc() : memref<8xf32>
  %hc = memref.cast %h : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_recv_f32(%hc, %axes, %c1, %c4) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  call @pmlir_rt_send_f32(%gc, %axes, %c1, %c4) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  call @pmlir_rt_send_f32(%gc, %axes, %c1, %c3) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  memref.dealloc %h : memref<8xf32>
  return %g : memref<8xf32>
}

// -----

// What reads or writes memory between two messages ends the run: a fill, a
// collective; a lone message is no group.
// CHECK-LABEL: func.func @apart
// CHECK-NOT:   pmlir_rt_message_group
memref.global "private" constant @axes_0 : memref<1xi64> = dense<0>
func.func private @pmlir_rt_send_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func private @pmlir_rt_recv_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func private @pmlir_rt_all_reduce_f32(memref<?xf32>, memref<?xf32>, memref<?xi64>, i32)
func.func @apart(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c1 = arith.constant 1 : i64
  %zero = arith.constant 0.0 : f32
  %sum = arith.constant 0 : i32
  %g0 = memref.get_global @axes_0 : memref<1xi64>
  %axes = memref.cast %g0 : memref<1xi64> to memref<?xi64>
  %ac = memref.cast %a : memref<8xf32> to memref<?xf32>
  %bc = memref.cast %b : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_send_f32(%ac, %axes, %c1, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  linalg.fill ins(%zero : f32) outs(%b : memref<8xf32>)
  call @pmlir_rt_recv_f32(%bc, %axes, %c1, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  call @pmlir_rt_all_reduce_f32(%ac, %bc, %axes, %sum) : (memref<?xf32>, memref<?xf32>, memref<?xi64>, i32) -> ()
  call @pmlir_rt_send_f32(%ac, %axes, %c1, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  return
}

// -----

// A loop between two messages ends the run too: its body may touch memory.
// CHECK-LABEL: func.func @loop
// CHECK-NOT:   pmlir_rt_message_group
memref.global "private" constant @axes_0 : memref<1xi64> = dense<0>
func.func private @pmlir_rt_send_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func private @pmlir_rt_recv_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func @loop(%a: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1 : i64
  %g0 = memref.get_global @axes_0 : memref<1xi64>
  %axes = memref.cast %g0 : memref<1xi64> to memref<?xi64>
  %ac = memref.cast %a : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_send_f32(%ac, %axes, %one, %one) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  scf.for %i = %c0 to %n step %c1 {
  }
  call @pmlir_rt_recv_f32(%ac, %axes, %one, %one) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  return
}

// -----

// A ring forwards the block it has just received: the receive and the send
// of the same buffer cannot run at once, so the send starts the next run,
// which the receive after it joins.
// CHECK-LABEL: func.func @forward
// CHECK:         %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NOT:     pmlir_rt_message_group
// CHECK:         call @pmlir_rt_recv_f32
// CHECK-NEXT:    %[[V:.*]] = memref.cast %[[B]]
// CHECK-NEXT:    %[[N:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    call @pmlir_rt_message_group(%[[N]])
// CHECK-NEXT:    call @pmlir_rt_send_f32(%[[V]],
// CHECK-NEXT:    memref.cast
// CHECK-NEXT:    call @pmlir_rt_recv_f32
// CHECK-NEXT:    memref.dealloc %[[B]]
memref.global "private" constant @axes_0 : memref<1xi64> = dense<0>
func.func private @pmlir_rt_send_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func private @pmlir_rt_recv_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func @forward(%a: memref<8xf32>) {
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %g0 = memref.get_global @axes_0 : memref<1xi64>
  %axes = memref.cast %g0 : memref<1xi64> to memref<?xi64>
  %block = memref.alloc() : memref<8xf32>
  %bc = memref.cast %block : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_recv_f32(%bc, %axes, %c0, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  %view = memref.cast %block : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_send_f32(%view, %axes, %c1, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  %ac = memref.cast %a : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_recv_f32(%ac, %axes, %c0, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  memref.dealloc %block : memref<8xf32>
  return
}

// -----

// With sink-messages (the GPU pipeline's): a ring step's sends move down
// past the compute that reads their blocks, to join the receives after it;
// those stay before the compute that reads what they receive (a linalg op
// inside an scf.if), and the send after that starts the next run. (A
// write into an argument, which may be the sent one, would keep them.)
// RUN: pmlir-opt %s --split-input-file --pmlir-group-messages=sink-messages=true | FileCheck %s --check-prefix=SINK
// SINK-LABEL: func.func @ring
// SINK:         linalg.generic
// SINK:         linalg.yield
// SINK-NEXT:    }
// SINK-NEXT:    %[[R:.*]] = memref.alloc() : memref<8xf32>
// SINK-NEXT:    memref.cast %[[R]]
// SINK-NEXT:    %[[N:.*]] = arith.constant 3 : i64
// SINK-NEXT:    call @pmlir_rt_message_group(%[[N]])
// SINK-NEXT:    call @pmlir_rt_send_f32
// SINK-NEXT:    call @pmlir_rt_send_f32
// SINK-NEXT:    call @pmlir_rt_recv_f32
// SINK-NEXT:    memref.dealloc
// SINK-NEXT:    memref.expand_shape %[[R]]
// SINK-NEXT:    scf.if
// SINK:         call @pmlir_rt_send_f32
// SINK-NEXT:    memref.dealloc %[[R]]
// Without it, nothing moves: the two sends alone are a group.
// CHECK-LABEL: func.func @ring
// CHECK:         call @pmlir_rt_message_group
// CHECK-NEXT:    call @pmlir_rt_send_f32
// CHECK-NEXT:    call @pmlir_rt_send_f32
// CHECK-NEXT:    memref.dealloc
// CHECK:         linalg.generic
// CHECK-NOT:     call @pmlir_rt_message_group
memref.global "private" constant @axes_0 : memref<1xi64> = dense<0>
func.func private @pmlir_rt_send_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func private @pmlir_rt_recv_f32(memref<?xf32>, memref<?xi64>, i64, i64)
func.func @ring(%k: memref<8xf32>, %v: memref<8xf32>, %p: memref<2x4xf32>, %c: i1) {
  %c1 = arith.constant 1 : i64
  %g0 = memref.get_global @axes_0 : memref<1xi64>
  %axes = memref.cast %g0 : memref<1xi64> to memref<?xi64>
  %kc = memref.cast %k : memref<8xf32> to memref<?xf32>
  %vc = memref.cast %v : memref<8xf32> to memref<?xf32>
  %t = memref.alloc() : memref<8xf32>
  %tc = memref.cast %t : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_send_f32(%kc, %axes, %c1, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  call @pmlir_rt_send_f32(%tc, %axes, %c1, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  memref.dealloc %t : memref<8xf32>
  %w = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%k, %v : memref<8xf32>, memref<8xf32>) outs(%w : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.mulf %a, %b : f32
    linalg.yield %s : f32
  }
  %r = memref.alloc() : memref<8xf32>
  %rc = memref.cast %r : memref<8xf32> to memref<?xf32>
  call @pmlir_rt_recv_f32(%rc, %axes, %c1, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  %e = memref.expand_shape %r [[0, 1]] output_shape [2, 4] : memref<8xf32> into memref<2x4xf32>
  scf.if %c {
    linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                    iterator_types = ["parallel", "parallel"]}
        ins(%e : memref<2x4xf32>) outs(%p : memref<2x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.addf %in, %out : f32
      linalg.yield %s : f32
    }
  }
  call @pmlir_rt_send_f32(%rc, %axes, %c1, %c1) : (memref<?xf32>, memref<?xi64>, i64, i64) -> ()
  memref.dealloc %r : memref<8xf32>
  memref.dealloc %w : memref<8xf32>
  return
}
