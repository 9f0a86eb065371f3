// Collectives lowered by pmlir-lower-shard-to-runtime, run on a 2x2 mesh.
// With (m0, m1) this process's grid coordinates:
//   x[i][j] = 100 m0 + 10 m1 + 3i + j                          (2x3)
//   g = all_gather x over axis 0 along dim 1:
//       g[i][j] = 100 (j / 3) + 10 m1 + 3i + j % 3             (2x6)
//   r = reduce_scatter g over axis 1 along dim 1 (sum):
//       r[i][j] = sum over m1' of g(m1')[i][3 m1 + j] = 200 m1 + 10 + 6i + 2j
//   out = r + 1000 * (sum over all processes of the linear index, 0+1+2+3)
// so rank 0 (m0 = m1 = 0) writes [[6010, 6012, 6014], [6016, 6018, 6020]].
shard.grid @mesh(shape = 2x2)
func.func @forward() -> tensor<2x3xf32> {
  %m:2 = shard.process_multi_index on @mesh : index, index
  %c100 = arith.constant 100 : index
  %c10 = arith.constant 10 : index
  %a = arith.muli %m#0, %c100 : index
  %b = arith.muli %m#1, %c10 : index
  %ab = arith.addi %a, %b : index
  %abi = arith.index_cast %ab : index to i64
  %abf = arith.sitofp %abi : i64 to f32
  %base = tensor.splat %abf : tensor<2x3xf32>
  %iota = arith.constant dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]> : tensor<2x3xf32>
  %x = tfm.add %base, %iota : tensor<2x3xf32>, tensor<2x3xf32>
  %g = shard.all_gather %x on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x3xf32> -> tensor<2x6xf32>
  %r = shard.reduce_scatter %g on @mesh grid_axes = [1] scatter_axis = 1 : tensor<2x6xf32> -> tensor<2x3xf32>
  %l = shard.process_linear_index on @mesh : index
  %li = arith.index_cast %l : index to i64
  %lf = arith.sitofp %li : i64 to f32
  %ls = tensor.splat %lf : tensor<2x3xf32>
  %sum = shard.all_reduce %ls on @mesh grid_axes = [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  %k = tfm.scale %sum, 1.0e+03 : tensor<2x3xf32>
  %out = tfm.add %r, %k : tensor<2x3xf32>, tensor<2x3xf32>
  return %out : tensor<2x3xf32>
}
