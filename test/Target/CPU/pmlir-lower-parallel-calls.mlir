// RUN: pmlir-opt %s --pmlir-lower-parallel-calls --split-input-file --verify-diagnostics | FileCheck %s

// Each call stores its captures (a descriptor's fields, a scalar) into a
// struct on the caller's stack, allocated once in the entry block, and
// calls the runtime with the chunk function, which loads them and calls
// the body. The dispatch declaration goes.
// CHECK-LABEL: llvm.func @pmlir_rt_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64)
// CHECK-NOT: f_parallel0_dispatch
// CHECK-LABEL: llvm.func @f(
// CHECK-SAME: %[[P:[a-z0-9_]+]]: !llvm.ptr, %[[OFF:[a-z0-9_]+]]: i64, %[[S:[a-z0-9_]+]]: f32, %[[N:[a-z0-9_]+]]: i64)
// CHECK: %[[ONE:.*]] = llvm.mlir.constant(1 : i64)
// CHECK: %[[SLOT:.*]] = llvm.alloca %[[ONE]] x !llvm.struct<(ptr, i64, f32)>
// CHECK: llvm.br ^[[LOOP:.*]]
// CHECK: ^[[LOOP]]:
// CHECK: %[[F0:.*]] = llvm.getelementptr %[[SLOT]][0, 0]
// CHECK: llvm.store %[[P]], %[[F0]] : !llvm.ptr, !llvm.ptr
// CHECK: %[[F1:.*]] = llvm.getelementptr %[[SLOT]][0, 1]
// CHECK: llvm.store %[[OFF]], %[[F1]] : i64, !llvm.ptr
// CHECK: %[[F2:.*]] = llvm.getelementptr %[[SLOT]][0, 2]
// CHECK: llvm.store %[[S]], %[[F2]] : f32, !llvm.ptr
// CHECK: %[[CHUNK:.*]] = llvm.mlir.addressof @f_parallel0_chunk
// CHECK: llvm.call @pmlir_rt_parallel_for(%[[CHUNK]], %[[SLOT]], %[[N]], %[[OFF]])
// CHECK-LABEL: llvm.func @f_parallel0(
// CHECK-LABEL: llvm.func internal @f_parallel0_chunk(
// CHECK-SAME: %[[CTX:[a-z0-9_]+]]: !llvm.ptr, %[[BEGIN:[a-z0-9_]+]]: i64, %[[END:[a-z0-9_]+]]: i64)
// CHECK: %[[G0:.*]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK: %[[L0:.*]] = llvm.load %[[G0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[G1:.*]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK: %[[L1:.*]] = llvm.load %[[G1]] : !llvm.ptr -> i64
// CHECK: %[[G2:.*]] = llvm.getelementptr %[[CTX]][0, 2]
// CHECK: %[[L2:.*]] = llvm.load %[[G2]] : !llvm.ptr -> f32
// CHECK: llvm.call @f_parallel0(%[[BEGIN]], %[[END]], %[[L0]], %[[L1]], %[[L2]])
// CHECK: llvm.return
llvm.func @f_parallel0_dispatch(i64, i64, !llvm.ptr, i64, f32) attributes {pmlir.parallel_body = @f_parallel0}
llvm.func @f(%p: !llvm.ptr, %off: i64, %s: f32, %n: i64) {
  llvm.br ^loop
^loop:
  llvm.call @f_parallel0_dispatch(%n, %off, %p, %off, %s) : (i64, i64, !llvm.ptr, i64, f32) -> ()
  llvm.return
}
llvm.func @f_parallel0(%begin: i64, %end: i64, %p: !llvm.ptr, %off: i64, %s: f32) {
  llvm.return
}

// -----

// A module without dispatches is left alone: no runtime declaration.
// CHECK-LABEL: llvm.func @plain
// CHECK-NOT: pmlir_rt_parallel_for
llvm.func @plain() {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op names no function as its pmlir.parallel_body}}
llvm.func @g_parallel0_dispatch(i64, i64) attributes {pmlir.parallel_body = @missing}

// -----

// expected-error @+1 {{'llvm.func' op does not take its body's (count, work, captures...) arguments}}
llvm.func @h_parallel0_dispatch(i64, i64, f32) attributes {pmlir.parallel_body = @h_parallel0}
llvm.func @h_parallel0(%begin: i64, %end: i64) {
  llvm.return
}
