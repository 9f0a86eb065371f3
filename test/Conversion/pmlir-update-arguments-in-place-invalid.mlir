// RUN: pmlir-opt %s -split-input-file --pmlir-update-arguments-in-place="entry=train_step" -verify-diagnostics

// (An index past the arguments is refused by the dialect's verifier:
// test/Dialect/Tfm/invalid.mlir.)

// expected-error @+1 {{'func.func' op result #0 updates argument #0, which is no buffer the result can be written into}}
func.func @train_step(%p: tensor<4xf32>, %q: memref<4xf32>) -> (memref<4xf32> {tfm.updates = 0 : i64}) {
  return %q : memref<4xf32>
}
