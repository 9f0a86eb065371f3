// A global program whose constraints force every kind of reshard; run with
// --check, the partitioned program on a 2x2 mesh must compute what it
// computes on one rank.
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  func.func @forward(%x: tensor<8x12xf32> {tfm.name = "x", tfm.sharding = #tfm.sharding<[["dp"], ["tp"]]>},
                     %w: tensor<12x16xf32> {tfm.name = "w", tfm.sharding = #tfm.sharding<[["tp"], []]>},
                     %v: tensor<16x4xf32> {tfm.name = "v"})
      -> (tensor<8x4xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) {
    // Row-parallel: a sum pending over tp, reduce-scattered over columns.
    %h = tfm.matmul %x, %w : tensor<8x12xf32>, tensor<12x16xf32> -> tensor<8x16xf32>
    %hs = tfm.sharding_constraint %h to <[["dp"], ["tp"]]> : tensor<8x16xf32>
    %g = tfm.gelu %hs tanh : tensor<8x16xf32>
    // tp moves from the columns to the rows: all_to_all.
    %gm = tfm.sharding_constraint %g to <[["dp", "tp"], []]> : tensor<8x16xf32>
    %s = tfm.softmax %gm : tensor<8x16xf32>
    // Rows gathered, columns sliced.
    %sr = tfm.sharding_constraint %s to <[[], ["dp"]]> : tensor<8x16xf32>
    %e = tfm.scale %sr, 3.0 : tensor<8x16xf32>
    %y = tfm.matmul %e, %v : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}
