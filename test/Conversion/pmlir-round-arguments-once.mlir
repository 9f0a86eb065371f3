// RUN: pmlir-opt %s --pmlir-round-arguments-once --split-input-file | FileCheck %s
// RUN: pmlir-opt %s --pmlir-round-arguments-once="entry=step" --split-input-file | FileCheck %s --check-prefix=OTHER-ENTRY

#id = affine_map<(d0, d1) -> (d0, d1)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>

// A read-only weight rounded in the entry: its bf16 form becomes an
// argument of its own, which the GEMM reads; the f32 argument stays, unread
// (tfm.bf16_only_arguments).
// The activation, rounded from an argument a result updates, stays rounded
// in the program.
// CHECK: module attributes {tfm.bf16_only_arguments = array<i64: 1>, tfm.rounded_arguments = array<i64: 1>}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {bufferization.writable = true}, %[[W:.*]]: tensor<8x16xf32> {bufferization.writable = false}, %[[WH:.*]]: tensor<8x16xbf16> {bufferization.writable = false})
// CHECK: %[[XH:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK-NOT: ins(%[[W]]
// CHECK: linalg.generic {{.*}} ins(%[[XH]], %[[WH]] : tensor<4x8xbf16>, tensor<8x16xbf16>)
// OTHER-ENTRY-NOT: tfm.rounded_arguments
// OTHER-ENTRY-LABEL: func.func @forward
// OTHER-ENTRY-SAME: (%{{.*}}: tensor<4x8xf32> {bufferization.writable = true}, %{{.*}}: tensor<8x16xf32> {bufferization.writable = false}) -> tensor<4x16xf32>
func.func @forward(%x: tensor<4x8xf32> {bufferization.writable = true}, %w: tensor<8x16xf32> {bufferization.writable = false}) -> tensor<4x16xf32> {
  %ex = tensor.empty() : tensor<4x8xbf16>
  %xh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%ex : tensor<4x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  %ew = tensor.empty() : tensor<8x16xbf16>
  %wh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xf32>) outs(%ew : tensor<8x16xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x16xbf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%xh, %wh : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%init : tensor<4x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %af, %bf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A layer's parameter that both calls pass a read-only argument: the
// rounding moves out of the layer (its slices become slices of the bf16
// parameter, the f32 parameter it no longer reads goes) and out of the
// entry, one bf16 argument for each weight, which the entry then reads
// only in bf16. The layer's other parameter gets its rounding from a value
// the entry computes, which it keeps. A table read in f32 too keeps its f32
// use.
// CHECK: module attributes {tfm.bf16_only_arguments = array<i64: 1, 2>, tfm.rounded_arguments = array<i64: 1, 2, 3>}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {bufferization.writable = false}, %[[W0:.*]]: tensor<8x16xf32> {bufferization.writable = false}, %[[W1:.*]]: tensor<8x16xf32> {bufferization.writable = false}, %[[T:.*]]: tensor<8x8xf32> {bufferization.writable = false}, %[[W0H:.*]]: tensor<8x16xbf16> {bufferization.writable = false}, %[[W1H:.*]]: tensor<8x16xbf16> {bufferization.writable = false}, %[[TH:.*]]: tensor<8x8xbf16> {bufferization.writable = false})
// CHECK: tensor.extract %[[T]]
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: call @layer(%[[H]], %[[W0H]])
// CHECK: call @layer(%[[H]], %[[W1H]])
// CHECK: return {{.*}}, %[[TH]]
// CHECK-LABEL: func.func private @layer
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[PH:.*]]: tensor<8x16xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[A]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK: %[[S0:.*]] = tensor.extract_slice %[[PH]][0, 0] [8, 8] [1, 1] : tensor<8x16xbf16> to tensor<8x8xbf16>
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[PH]][0, 8] [8, 8] [1, 1] : tensor<8x16xbf16> to tensor<8x8xbf16>
// CHECK-NOT: arith.truncf
// CHECK: return %{{.*}}, %[[S0]], %[[S1]]
func.func @forward(%x: tensor<4x8xf32> {bufferization.writable = false}, %w0: tensor<8x16xf32> {bufferization.writable = false}, %w1: tensor<8x16xf32> {bufferization.writable = false}, %table: tensor<8x8xf32> {bufferization.writable = false}) -> (f32, tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>) {
  %c0 = arith.constant 0 : index
  %first = tensor.extract %table[%c0, %c0] : tensor<8x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %a0, %l0, %r0 = call @layer(%h, %w0) : (tensor<4x8xf32>, tensor<8x16xf32>) -> (tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>)
  %a1, %l1, %r1 = call @layer(%h, %w1) : (tensor<4x8xf32>, tensor<8x16xf32>) -> (tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>)
  %et = tensor.empty() : tensor<8x8xbf16>
  %th = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%table : tensor<8x8xf32>) outs(%et : tensor<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x8xbf16>
  return %first, %a0, %l1, %r1, %th : f32, tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>
}

func.func private @layer(%a: tensor<4x8xf32>, %p: tensor<8x16xf32>) -> (tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>) {
  %ea = tensor.empty() : tensor<4x8xbf16>
  %ah = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%ea : tensor<4x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  %p0 = tensor.extract_slice %p[0, 0] [8, 8] [1, 1] : tensor<8x16xf32> to tensor<8x8xf32>
  %e0 = tensor.empty() : tensor<8x8xbf16>
  %h0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p0 : tensor<8x8xf32>) outs(%e0 : tensor<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x8xbf16>
  %p1 = tensor.extract_slice %p[0, 8] [8, 8] [1, 1] : tensor<8x16xf32> to tensor<8x8xf32>
  %e1 = tensor.empty() : tensor<8x8xbf16>
  %h1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p1 : tensor<8x8xf32>) outs(%e1 : tensor<8x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x8xbf16>
  return %ah, %h0, %h1 : tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<8x8xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Not rounded by the caller: an argument not marked read-only, a rounding
// that also scales (not the argument's bf16 form), and a layer one of whose
// calls passes it a computed value.
// CHECK-NOT: tfm.rounded_arguments
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<8x16xf32> {bufferization.writable = false}, %{{.*}}: tensor<8x16xf32> {bufferization.writable = false}) ->
// CHECK-LABEL: func.func private @layer
// CHECK-SAME: (%[[P:.*]]: tensor<8x16xf32>) -> tensor<8x16xbf16>
// CHECK: linalg.generic {{.*}} ins(%[[P]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xbf16>)
func.func @forward(%unmarked: tensor<8x16xf32>, %scaled: tensor<8x16xf32> {bufferization.writable = false}, %w: tensor<8x16xf32> {bufferization.writable = false}) -> (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) {
  %e0 = tensor.empty() : tensor<8x16xbf16>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%unmarked : tensor<8x16xf32>) outs(%e0 : tensor<8x16xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x16xbf16>
  %e1 = tensor.empty() : tensor<8x16xbf16>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%scaled : tensor<8x16xf32>) outs(%e1 : tensor<8x16xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %d = arith.addf %in, %in : f32
    %t = arith.truncf %d : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x16xbf16>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %computed = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<8x16xf32>
  %l0 = call @layer(%w) : (tensor<8x16xf32>) -> tensor<8x16xbf16>
  %l1 = call @layer(%computed) : (tensor<8x16xf32>) -> tensor<8x16xbf16>
  return %u, %s, %l0, %l1 : tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>
}

func.func private @layer(%p: tensor<8x16xf32>) -> tensor<8x16xbf16> {
  %e = tensor.empty() : tensor<8x16xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<8x16xf32>) outs(%e : tensor<8x16xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x16xbf16>
  return %h : tensor<8x16xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A weight the entry updates (a training step's) stays an f32 argument with
// no bf16 form of its own, but its roundings leave the layers (their f32
// parameter goes) and meet in the entry: one rounding before the first
// call, read by both.
// CHECK-NOT: tfm.rounded_arguments
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {bufferization.writable = false}, %[[W:.*]]: tensor<8x16xf32> {bufferization.writable = true}) ->
// CHECK: %[[WH:.*]] = linalg.generic {{.*}} ins(%[[W]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xbf16>)
// CHECK: } -> tensor<8x16xbf16>
// CHECK-NOT: arith.truncf
// CHECK: call @layer_forward(%[[X]], %[[WH]])
// CHECK-NOT: arith.truncf
// CHECK: call @layer_backward(%[[X]], %[[WH]])
// CHECK-LABEL: func.func private @layer_forward
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8x16xbf16>)
// CHECK-NOT: arith.truncf
// CHECK-LABEL: func.func private @layer_backward
// CHECK-SAME: (%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8x16xbf16>)
// CHECK-NOT: arith.truncf
func.func @forward(%x: tensor<4x8xf32> {bufferization.writable = false}, %w: tensor<8x16xf32> {bufferization.writable = true}) -> (tensor<8x16xbf16>, tensor<8x16xbf16>) {
  %f = call @layer_forward(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<8x16xbf16>
  %g = call @layer_backward(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<8x16xbf16>
  return %f, %g : tensor<8x16xbf16>, tensor<8x16xbf16>
}

func.func private @layer_forward(%a: tensor<4x8xf32>, %p: tensor<8x16xf32>) -> tensor<8x16xbf16> {
  %e = tensor.empty() : tensor<8x16xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<8x16xf32>) outs(%e : tensor<8x16xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x16xbf16>
  return %h : tensor<8x16xbf16>
}

func.func private @layer_backward(%a: tensor<4x8xf32>, %p: tensor<8x16xf32>) -> tensor<8x16xbf16> {
  %e = tensor.empty() : tensor<8x16xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<8x16xf32>) outs(%e : tensor<8x16xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x16xbf16>
  return %h : tensor<8x16xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A training step's weight, updated by an elementwise loop (AdamW's): it
// gets a bf16 form the step updates too. The layers read the form; the
// update loop rounds the new weight into it as a fourth output, returned
// with tfm.updates naming the form; the weight is still read in f32 by the
// loop, so it is no bf16-only argument.
// CHECK: module attributes {tfm.rounded_arguments = array<i64: 1>}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {bufferization.writable = false}, %[[W:.*]]: tensor<8x16xf32> {bufferization.writable = true}, %[[G:.*]]: tensor<8x16xf32> {bufferization.writable = false}, %[[WH:.*]]: tensor<8x16xbf16> {bufferization.writable = true})
// CHECK-SAME: -> (tensor<8x16xbf16>, tensor<8x16xf32> {tfm.updates = 1 : i64}, tensor<8x16xbf16> {tfm.updates = 3 : i64})
// CHECK-NOT: arith.truncf
// CHECK: %[[F:.*]] = call @layer_forward(%[[X]], %[[WH]])
// CHECK: %[[NEW:.*]]:2 = linalg.generic {{.*}} ins(%[[G]] : tensor<8x16xf32>) outs(%[[W]], %[[WH]] : tensor<8x16xf32>, tensor<8x16xbf16>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[OUT:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT: %[[S:.*]] = arith.subf %[[OUT]], %[[IN]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[S]], %[[R]] : f32, bf16
// CHECK: return %[[F]], %[[NEW]]#0, %[[NEW]]#1
func.func @forward(%x: tensor<4x8xf32> {bufferization.writable = false}, %w: tensor<8x16xf32> {bufferization.writable = true}, %g: tensor<8x16xf32> {bufferization.writable = false}) -> (tensor<8x16xbf16>, tensor<8x16xf32> {tfm.updates = 1 : i64}) {
  %f = call @layer_forward(%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<8x16xbf16>
  %new = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<8x16xf32>) outs(%w : tensor<8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.subf %o, %in : f32
    linalg.yield %s : f32
  } -> tensor<8x16xf32>
  return %f, %new : tensor<8x16xbf16>, tensor<8x16xf32>
}

func.func private @layer_forward(%a: tensor<4x8xf32>, %p: tensor<8x16xf32>) -> tensor<8x16xbf16> {
  %e = tensor.empty() : tensor<8x16xbf16>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<8x16xf32>) outs(%e : tensor<8x16xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x16xbf16>
  return %h : tensor<8x16xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Updated weights whose update cannot round what it writes keep their one
// rounding in the step: one updated by a loop that also reduces, one whose
// new value comes from a call.
// CHECK-NOT: tfm.rounded_arguments
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[V:.*]]: tensor<8xf32> {bufferization.writable = true}, %[[W:.*]]: tensor<8x16xf32> {bufferization.writable = true}) -> (tensor<8xbf16>, tensor<8x16xbf16>, tensor<8xf32> {tfm.updates = 0 : i64}, tensor<8x16xf32> {tfm.updates = 1 : i64})
// CHECK: linalg.generic {{.*}} ins(%[[V]] : tensor<8xf32>) outs(%{{.*}} : tensor<8xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[W]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xbf16>)
func.func @forward(%v: tensor<8xf32> {bufferization.writable = true}, %w: tensor<8x16xf32> {bufferization.writable = true}) -> (tensor<8xbf16>, tensor<8x16xbf16>, tensor<8xf32> {tfm.updates = 0 : i64}, tensor<8x16xf32> {tfm.updates = 1 : i64}) {
  %ev = tensor.empty() : tensor<8xbf16>
  %vh = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<8xf32>) outs(%ev : tensor<8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8xbf16>
  %ew = tensor.empty() : tensor<8x16xbf16>
  %wh = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xf32>) outs(%ew : tensor<8x16xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<8x16xbf16>
  %summed = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%w : tensor<8x16xf32>) outs(%v : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %neww = call @update(%w) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %vh, %wh, %summed, %neww : tensor<8xbf16>, tensor<8x16xbf16>, tensor<8xf32>, tensor<8x16xf32>
}

func.func private @update(%p: tensor<8x16xf32>) -> tensor<8x16xf32> {
  return %p : tensor<8x16xf32>
}
