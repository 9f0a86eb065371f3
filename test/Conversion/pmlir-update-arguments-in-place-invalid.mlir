// RUN: pmlir-opt %s -split-input-file --pmlir-update-arguments-in-place="entry=train_step" -verify-diagnostics

// expected-error @+1 {{'func.func' op result #0 updates argument #3, which is no buffer the result can be written into}}
func.func @train_step(%p: memref<4xf32>) -> (memref<4xf32> {tfm.updates = 3 : i64}) {
  return %p : memref<4xf32>
}
