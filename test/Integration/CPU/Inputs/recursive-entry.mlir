// An entry that calls itself through another function (pmlir-run-errors.test).
func.func @forward(%a: tensor<4xf32> {tfm.name = "w"}) -> tensor<4xf32> {
  %r = func.call @twice(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = func.call @forward(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
