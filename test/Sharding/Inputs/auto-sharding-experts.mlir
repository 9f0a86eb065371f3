// Eight experts of a Mixtral block (hidden 1024, FFN 2048) on four devices,
// the tokens split by batch as data parallelism splits them: the input of
// auto-sharding's expert-parallel case.
module attributes {tfm.mesh = #tfm.mesh<ep = 4>} {
  func.func @experts(%x: tensor<8x128x1024xf32> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>},
                     %e: tensor<8x128x2xi64> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>},
                     %w: tensor<8x128x2xf32> {tfm.sharding = #tfm.sharding<[["ep"], [], []]>},
                     %w1: tensor<8x2048x1024xf32>, %w3: tensor<8x2048x1024xf32>,
                     %w2: tensor<8x1024x2048xf32>) -> tensor<8x128x1024xf32> {
    %y = tfm.moe_experts %x, %e, %w, %w1, %w3, %w2
        : tensor<8x128x1024xf32>, tensor<8x128x2xi64>, tensor<8x128x2xf32>, tensor<8x2048x1024xf32>,
          tensor<8x2048x1024xf32>, tensor<8x1024x2048xf32> -> tensor<8x128x1024xf32>
    return %y : tensor<8x128x1024xf32>
  }
}
