// pmlir-gen llama --layers 2 --hidden 64 --heads 8 --kv-heads 2 --ffn 176 --vocab 101 --seq 16 --batch 2 --rms-eps 1e-06 --rope-theta 1e+04
module attributes {tfm.huggingface_config = {architectures = ["LlamaForCausalLM"], attention_bias = false, dtype = "float32", hidden_act = "silu", hidden_size = 64 : i64, intermediate_size = 176 : i64, max_position_embeddings = 16 : i64, mlp_bias = false, model_type = "llama", num_attention_heads = 8 : i64, num_hidden_layers = 2 : i64, num_key_value_heads = 2 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_theta = 1.000000e+04 : f64, tie_word_embeddings = false, vocab_size = 101 : i64}} {
  func.func @forward(%arg0: tensor<2x16xi64> {tfm.dims = ["batch", "seq"], tfm.name = "input_ids", tfm.role = #tfm<role input>}, %arg1: tensor<101x64xf32> {tfm.dims = ["vocab", "hidden"], tfm.name = "model.embed_tokens.weight", tfm.role = #tfm<role param>}, %arg2: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "model.layers.0.input_layernorm.weight", tfm.role = #tfm<role param>}, %arg3: tensor<64x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.0.self_attn.q_proj.weight", tfm.role = #tfm<role param>}, %arg4: tensor<16x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.0.self_attn.k_proj.weight", tfm.role = #tfm<role param>}, %arg5: tensor<16x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.0.self_attn.v_proj.weight", tfm.role = #tfm<role param>}, %arg6: tensor<64x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.0.self_attn.o_proj.weight", tfm.role = #tfm<role param>}, %arg7: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "model.layers.0.post_attention_layernorm.weight", tfm.role = #tfm<role param>}, %arg8: tensor<176x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.0.mlp.gate_proj.weight", tfm.role = #tfm<role param>}, %arg9: tensor<176x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.0.mlp.up_proj.weight", tfm.role = #tfm<role param>}, %arg10: tensor<64x176xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.0.mlp.down_proj.weight", tfm.role = #tfm<role param>}, %arg11: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "model.layers.1.input_layernorm.weight", tfm.role = #tfm<role param>}, %arg12: tensor<64x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.1.self_attn.q_proj.weight", tfm.role = #tfm<role param>}, %arg13: tensor<16x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.1.self_attn.k_proj.weight", tfm.role = #tfm<role param>}, %arg14: tensor<16x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.1.self_attn.v_proj.weight", tfm.role = #tfm<role param>}, %arg15: tensor<64x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.1.self_attn.o_proj.weight", tfm.role = #tfm<role param>}, %arg16: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "model.layers.1.post_attention_layernorm.weight", tfm.role = #tfm<role param>}, %arg17: tensor<176x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.1.mlp.gate_proj.weight", tfm.role = #tfm<role param>}, %arg18: tensor<176x64xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.1.mlp.up_proj.weight", tfm.role = #tfm<role param>}, %arg19: tensor<64x176xf32> {tfm.dims = ["out", "in"], tfm.name = "model.layers.1.mlp.down_proj.weight", tfm.role = #tfm<role param>}, %arg20: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "model.norm.weight", tfm.role = #tfm<role param>}, %arg21: tensor<101x64xf32> {tfm.dims = ["vocab", "hidden"], tfm.name = "lm_head.weight", tfm.role = #tfm<role param>}) -> tensor<2x16x101xf32> {
    %0 = tfm.embedding %arg1[%arg0] : tensor<101x64xf32>, tensor<2x16xi64> -> tensor<2x16x64xf32>
    %1 = tfm.arange start = 0 : tensor<16xi64>
    %2 = tfm.layer 0 : tensor<2x16x64xf32> {
      %6 = tfm.rmsnorm %0, %arg2 eps = 9.9999999999999995E-7 : tensor<2x16x64xf32>, tensor<64xf32>
      %7 = tfm.matmul %6, %arg3 transpose_rhs : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %8 = tfm.split_heads %7 heads = 8 : tensor<2x16x64xf32> -> tensor<2x8x16x8xf32>
      %9 = tfm.matmul %6, %arg4 transpose_rhs : tensor<2x16x64xf32>, tensor<16x64xf32> -> tensor<2x16x16xf32>
      %10 = tfm.split_heads %9 heads = 2 : tensor<2x16x16xf32> -> tensor<2x2x16x8xf32>
      %11 = tfm.matmul %6, %arg5 transpose_rhs : tensor<2x16x64xf32>, tensor<16x64xf32> -> tensor<2x16x16xf32>
      %12 = tfm.split_heads %11 heads = 2 : tensor<2x16x16xf32> -> tensor<2x2x16x8xf32>
      %13 = tfm.rope %8, %1 theta = 1.000000e+04 : tensor<2x8x16x8xf32>, tensor<16xi64>
      %14 = tfm.rope %10, %1 theta = 1.000000e+04 : tensor<2x2x16x8xf32>, tensor<16xi64>
      %15 = tfm.attention %13, %14, %12 causal scale = 0.35355339059327373 : tensor<2x8x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x8x16x8xf32>
      %16 = tfm.merge_heads %15 : tensor<2x8x16x8xf32> -> tensor<2x16x64xf32>
      %17 = tfm.matmul %16, %arg6 transpose_rhs : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %18 = tfm.add %0, %17 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
      %19 = tfm.rmsnorm %18, %arg7 eps = 9.9999999999999995E-7 : tensor<2x16x64xf32>, tensor<64xf32>
      %20 = tfm.matmul %19, %arg8 transpose_rhs : tensor<2x16x64xf32>, tensor<176x64xf32> -> tensor<2x16x176xf32>
      %21 = tfm.silu %20 : tensor<2x16x176xf32>
      %22 = tfm.matmul %19, %arg9 transpose_rhs : tensor<2x16x64xf32>, tensor<176x64xf32> -> tensor<2x16x176xf32>
      %23 = tfm.mul %21, %22 : tensor<2x16x176xf32>, tensor<2x16x176xf32>
      %24 = tfm.matmul %23, %arg10 transpose_rhs : tensor<2x16x176xf32>, tensor<64x176xf32> -> tensor<2x16x64xf32>
      %25 = tfm.add %18, %24 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
      tfm.yield %25 : tensor<2x16x64xf32>
    }
    %3 = tfm.layer 1 : tensor<2x16x64xf32> {
      %6 = tfm.rmsnorm %2, %arg11 eps = 9.9999999999999995E-7 : tensor<2x16x64xf32>, tensor<64xf32>
      %7 = tfm.matmul %6, %arg12 transpose_rhs : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %8 = tfm.split_heads %7 heads = 8 : tensor<2x16x64xf32> -> tensor<2x8x16x8xf32>
      %9 = tfm.matmul %6, %arg13 transpose_rhs : tensor<2x16x64xf32>, tensor<16x64xf32> -> tensor<2x16x16xf32>
      %10 = tfm.split_heads %9 heads = 2 : tensor<2x16x16xf32> -> tensor<2x2x16x8xf32>
      %11 = tfm.matmul %6, %arg14 transpose_rhs : tensor<2x16x64xf32>, tensor<16x64xf32> -> tensor<2x16x16xf32>
      %12 = tfm.split_heads %11 heads = 2 : tensor<2x16x16xf32> -> tensor<2x2x16x8xf32>
      %13 = tfm.rope %8, %1 theta = 1.000000e+04 : tensor<2x8x16x8xf32>, tensor<16xi64>
      %14 = tfm.rope %10, %1 theta = 1.000000e+04 : tensor<2x2x16x8xf32>, tensor<16xi64>
      %15 = tfm.attention %13, %14, %12 causal scale = 0.35355339059327373 : tensor<2x8x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32> -> tensor<2x8x16x8xf32>
      %16 = tfm.merge_heads %15 : tensor<2x8x16x8xf32> -> tensor<2x16x64xf32>
      %17 = tfm.matmul %16, %arg15 transpose_rhs : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %18 = tfm.add %2, %17 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
      %19 = tfm.rmsnorm %18, %arg16 eps = 9.9999999999999995E-7 : tensor<2x16x64xf32>, tensor<64xf32>
      %20 = tfm.matmul %19, %arg17 transpose_rhs : tensor<2x16x64xf32>, tensor<176x64xf32> -> tensor<2x16x176xf32>
      %21 = tfm.silu %20 : tensor<2x16x176xf32>
      %22 = tfm.matmul %19, %arg18 transpose_rhs : tensor<2x16x64xf32>, tensor<176x64xf32> -> tensor<2x16x176xf32>
      %23 = tfm.mul %21, %22 : tensor<2x16x176xf32>, tensor<2x16x176xf32>
      %24 = tfm.matmul %23, %arg19 transpose_rhs : tensor<2x16x176xf32>, tensor<64x176xf32> -> tensor<2x16x64xf32>
      %25 = tfm.add %18, %24 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
      tfm.yield %25 : tensor<2x16x64xf32>
    }
    %4 = tfm.rmsnorm %3, %arg20 eps = 9.9999999999999995E-7 : tensor<2x16x64xf32>, tensor<64xf32>
    %5 = tfm.matmul %4, %arg21 transpose_rhs : tensor<2x16x64xf32>, tensor<101x64xf32> -> tensor<2x16x101xf32>
    return %5 : tensor<2x16x101xf32>
  }
}
