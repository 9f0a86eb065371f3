// A forward without tfm.layer ops: pmlir-plan has nowhere to cut stages.
func.func @forward(%x: tensor<4x8xf32> {tfm.role = "input"}, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %y = tfm.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
