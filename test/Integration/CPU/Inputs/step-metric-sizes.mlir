// Two step metrics of one kind and index that disagree on their size:
// pmlir-run refuses the program before it runs (pmlir-run-errors.test).
func.func @forward(%e: tensor<2x3x2xi64> {tfm.name = "input_ids"},
                   %x: tensor<2x3xf32> {tfm.name = "x"}) -> tensor<2x3xf32> {
  %a = tfm.moe_expert_counts %e num_experts = 3 : tensor<2x3x2xi64> -> tensor<3xi64>
  tfm.step_metric %a kind = expert_tokens index = 0 : tensor<3xi64>
  %b = tfm.moe_expert_counts %e num_experts = 4 : tensor<2x3x2xi64> -> tensor<4xi64>
  tfm.step_metric %b kind = expert_tokens index = 0 : tensor<4xi64>
  return %x : tensor<2x3xf32>
}
