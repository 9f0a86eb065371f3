// Queries split over the sequence (as context parallelism splits them):
// positions from a sequence-split arange, RoPE and causal attention on
// query blocks, keys and values whole. Run with --check on tp = 4.
module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  func.func @forward(%q: tensor<2x4x16x8xf32> {tfm.name = "q", tfm.sharding = #tfm.sharding<[[], [], ["tp"], []]>},
                     %k: tensor<2x2x16x8xf32> {tfm.name = "k"},
                     %v: tensor<2x2x16x8xf32> {tfm.name = "v"})
      -> (tensor<2x4x16x8xf32> {tfm.sharding = #tfm.sharding<[[], [], ["tp"], []]>}) {
    %p = tfm.arange start = 3 : tensor<16xi64>
    %ps = tfm.sharding_constraint %p to <[["tp"]]> : tensor<16xi64>
    %qr = tfm.rope %q, %ps theta = 1.000000e+04 : tensor<2x4x16x8xf32>, tensor<16xi64>
    %o = tfm.attention %qr, %k, %v causal scale = 0.35 : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x4x16x8xf32>
    return %o : tensor<2x4x16x8xf32>
  }
}
