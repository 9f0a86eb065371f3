// Shards the devices do not divide are padded: every reshard of a padded
// dimension (pad + reduce_scatter, gather + cut, pad + slice) and a
// contraction over a padded dimension; run with --check on a 2x2 mesh, the
// partitioned program must compute what it computes on one rank.
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  func.func @forward(%x: tensor<7x11xf32> {tfm.name = "x", tfm.sharding = #tfm.sharding<[["dp"], ["tp"]]>},
                     %w: tensor<11x13xf32> {tfm.name = "w", tfm.sharding = #tfm.sharding<[["tp"], []]>},
                     %v: tensor<13x5xf32> {tfm.name = "v", tfm.sharding = #tfm.sharding<[["dp", "tp"], []]>})
      -> (tensor<7x5xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) {
    // Row-parallel over a padded K (11 on tp = 2): the sum pending over tp
    // is reduce-scattered over the padded columns (13 on tp).
    %h = tfm.matmul %x, %w : tensor<7x11xf32>, tensor<11x13xf32> -> tensor<7x13xf32>
    %hs = tfm.sharding_constraint %h to <[["dp"], ["tp"]]> : tensor<7x13xf32>
    %g = tfm.gelu %hs tanh : tensor<7x13xf32>
    // Padded rows (7 on dp = 2) and columns regathered and sliced anew.
    %gm = tfm.sharding_constraint %g to <[["tp"], ["dp"]]> : tensor<7x13xf32>
    %s = tfm.scale %gm, 3.0 : tensor<7x13xf32>
    // Contracts the columns, padded on dp against v's rows on dp x tp.
    %y = tfm.matmul %s, %v : tensor<7x13xf32>, tensor<13x5xf32> -> tensor<7x5xf32>
    return %y : tensor<7x5xf32>
  }
}
