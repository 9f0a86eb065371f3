// The unsharded MLP: fc1 -> bias -> GELU -> fc2 -> bias.
func.func @forward(%x: tensor<2x5x16xf32> {tfm.name = "x"},
                   %w1: tensor<16x64xf32> {tfm.name = "fc1.weight"},
                   %b1: tensor<64xf32> {tfm.name = "fc1.bias"},
                   %w2: tensor<64x16xf32> {tfm.name = "fc2.weight"},
                   %b2: tensor<16xf32> {tfm.name = "fc2.bias"}) -> tensor<2x5x16xf32> {
  %h = tfm.matmul %x, %w1 : tensor<2x5x16xf32>, tensor<16x64xf32> -> tensor<2x5x64xf32>
  %hb = tfm.add %h, %b1 : tensor<2x5x64xf32>, tensor<64xf32>
  %g = tfm.gelu %hb tanh : tensor<2x5x64xf32>
  %y = tfm.matmul %g, %w2 : tensor<2x5x64xf32>, tensor<64x16xf32> -> tensor<2x5x16xf32>
  %z = tfm.add %y, %b2 : tensor<2x5x16xf32>, tensor<16xf32>
  return %z : tensor<2x5x16xf32>
}
