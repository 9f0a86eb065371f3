// A 4 TB weight: more than any test machine's memory.
func.func @forward(%w: tensor<1000000x1000000xf32> {tfm.name = "w"}) -> tensor<1000000x1000000xf32> {
  return %w : tensor<1000000x1000000xf32>
}
