// Two arguments of one tfm.name (pmlir-run-errors.test).
func.func @forward(%a: tensor<4xf32> {tfm.name = "w"}, %b: tensor<8xf32> {tfm.name = "w"}) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
