// Both halves of a tp of 4 as axes of their own: x split over the major
// half (tp:(1)2), w over the minor half (tp:(2)2), the result over the
// minor half. Partitioned on a grid that cuts tp in two, it gathers x over
// tp:(1)2, slices it over tp:(2)2, and sums the matmul's partial products
// over tp:(2)2 alone.
module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  func.func @forward(%x: tensor<8x4xf32> {tfm.name = "x", tfm.role = "param", tfm.sharding = #tfm.sharding<[["tp:(1)2"], []]>},
                     %w: tensor<4x8xf32> {tfm.name = "w", tfm.role = "param", tfm.sharding = #tfm.sharding<[["tp:(2)2"], []]>})
      -> (tensor<8x8xf32> {tfm.sharding = #tfm.sharding<[["tp:(2)2"], []]>}) {
    %y = tfm.gelu %x tanh : tensor<8x4xf32>
    %z = tfm.matmul %y, %w : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    return %z : tensor<8x8xf32>
  }
}
