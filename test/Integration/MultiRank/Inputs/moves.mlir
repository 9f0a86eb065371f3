// The data-moving shard ops lowered by pmlir-lower-shard-to-runtime, run on
// a 2x2 mesh (dp=2,tp=2). With (m0, m1) this process's grid coordinates:
//   x[i][j] = 100 m0 + 10 m1 + 4i + j                            (2x4)
//   a = all_to_all x over axis 1, split dim 1, concat dim 0        (4x2)
//       a[2s + i][j] = x of (m0, s) [i][2 m1 + j]
//                    = 100 m0 + 10 s + 4i + 2 m1 + j
//   c = all_slice a over axis 0 along dim 0: rows 2 m0, 2 m0 + 1  (2x2)
//       c[i][j] = 110 m0 + 4i + 2 m1 + j
//   d = broadcast c over axis 1 from member (size of axis 1) - 1 = 1
//       d[i][j] = 110 m0 + 4i + 2 + j
//   e = d sent by m0 = 0 to m0 = 1 over axis 0, which returns what it got
//       e[i][j] = 4i + 2 + j
// The result [c d e] (2x6 per rank) is sharded by rows over (dp, tp), so
// the global 8x6 result holds rank r = 2 m0 + m1 in rows 2r, 2r + 1.
shard.grid @mesh(shape = 2x2)
func.func @forward() -> (tensor<2x6xf32> {tfm.sharding = [["dp", "tp"], []]}) {
  %m:2 = shard.process_multi_index on @mesh : index, index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  %c10 = arith.constant 10 : index
  %a0 = arith.muli %m#0, %c100 : index
  %a1 = arith.muli %m#1, %c10 : index
  %ab = arith.addi %a0, %a1 : index
  %abi = arith.index_cast %ab : index to i64
  %abf = arith.sitofp %abi : i64 to f32
  %base = tensor.splat %abf : tensor<2x4xf32>
  %iota = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]> : tensor<2x4xf32>
  %x = tfm.add %base, %iota : tensor<2x4xf32>, tensor<2x4xf32>
  %a = shard.all_to_all %x on @mesh grid_axes = [1] split_axis = 1 concat_axis = 0 : tensor<2x4xf32> -> tensor<4x2xf32>
  %c = shard.all_slice %a on @mesh grid_axes = [0] slice_axis = 0 : tensor<4x2xf32> -> tensor<2x2xf32>
  %g1 = shard.grid_shape @mesh axes = [1] : index
  %root = arith.subi %g1, %c1 : index
  %d = shard.broadcast %c on @mesh grid_axes = [1] root = [%root] : (tensor<2x2xf32>, index) -> tensor<2x2xf32>
  %first = arith.cmpi eq, %m#0, %c0 : index
  %e = scf.if %first -> tensor<2x2xf32> {
    %s = shard.send %d on @mesh grid_axes = [0] destination = [1] : (tensor<2x2xf32>) -> tensor<2x2xf32>
    scf.yield %s : tensor<2x2xf32>
  } else {
    %r = shard.recv %d on @mesh grid_axes = [0] source = [0] : (tensor<2x2xf32>) -> tensor<2x2xf32>
    scf.yield %r : tensor<2x2xf32>
  }
  %empty = tensor.empty() : tensor<2x6xf32>
  %o1 = tensor.insert_slice %c into %empty[0, 0] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x6xf32>
  %o2 = tensor.insert_slice %d into %o1[0, 2] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x6xf32>
  %o3 = tensor.insert_slice %e into %o2[0, 4] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x6xf32>
  return %o3 : tensor<2x6xf32>
}

// A result split by columns over tp and replicated over dp:
// y[i][j] = 10 m1 + 4i + j per rank (2x4), so the global 2x8 result is
// [[0 1 2 3 10 11 12 13], [4 5 6 7 14 15 16 17]].
func.func @columns() -> (tensor<2x4xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) {
  %m = shard.process_multi_index on @mesh axes = [1] : index
  %c10 = arith.constant 10 : index
  %a = arith.muli %m, %c10 : index
  %ai = arith.index_cast %a : index to i64
  %af = arith.sitofp %ai : i64 to f32
  %base = tensor.splat %af : tensor<2x4xf32>
  %iota = arith.constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]> : tensor<2x4xf32>
  %y = tfm.add %base, %iota : tensor<2x4xf32>, tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
