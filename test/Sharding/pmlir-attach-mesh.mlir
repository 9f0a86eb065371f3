// RUN: pmlir-opt %s --pmlir-attach-mesh="mesh=dp=2,tp=2" | FileCheck %s
// RUN: pmlir-opt %s --pmlir-attach-mesh="mesh=dp=2,tp=2 rank-order=dp,tp" | FileCheck %s --check-prefix=ORDER
// RUN: pmlir-opt %s --pmlir-attach-mesh="mesh=x=2,y=3 rank-order=y,x" | FileCheck %s --check-prefix=NAMED
// RUN: not pmlir-opt %s --pmlir-attach-mesh="mesh=x=2" 2>&1 | FileCheck %s --check-prefix=NOPLACE
// RUN: not pmlir-opt %s --pmlir-attach-mesh="mesh=dp=0" 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: not pmlir-opt %s --pmlir-attach-mesh 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not pmlir-opt %s --pmlir-attach-mesh="mesh=dp=2 rank-order=tp" 2>&1 | FileCheck %s --check-prefix=BADORDER
// RUN: pmlir-opt %s --pmlir-attach-mesh="mesh=dp=2,tp=2" --pmlir-attach-mesh="mesh=dp=2,tp=2" | FileCheck %s
// RUN: not pmlir-opt %s --pmlir-attach-mesh="mesh=dp=2,tp=2" --pmlir-attach-mesh="mesh=tp=4" 2>&1 | FileCheck %s --check-prefix=OTHER

// The mesh text becomes the module's tfm.mesh, with its rank order where it
// is not the default.
// CHECK:    module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>}
// ORDER:    module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2, rank_order = [dp, tp]>}
// NAMED:    module attributes {tfm.mesh = #tfm.mesh<x = 2, y = 3, rank_order = [y, x]>}
// NOPLACE:  error: pmlir-attach-mesh: mesh axis 'x' has no default place in the rank order (tp, cp, ep, dp, pp); give one with --rank-order
// SIZE:     error: pmlir-attach-mesh: mesh axis 'dp': size '0' is not a positive integer
// EMPTY:    error: pmlir-attach-mesh: empty mesh: expected axes like 'tp=2,dp=2'
// BADORDER: error: pmlir-attach-mesh: rank order names 'tp', which is not an axis of the mesh 'dp=2'
// OTHER:    error: the module's tfm.mesh #tfm.mesh<dp = 2, tp = 2> is not the mesh #tfm.mesh<tp = 4> to attach
module {
  func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    return %x : tensor<4x8xf32>
  }
}
