// pmlir-gen gpt2 --layers 2 --hidden 64 --heads 4 --vocab 97 --seq 16 --batch 2 --max-positions 32
module attributes {tfm.huggingface_config = {activation_function = "gelu_new", architectures = ["GPT2LMHeadModel"], dtype = "float32", layer_norm_epsilon = 1.000000e-05 : f64, model_type = "gpt2", n_embd = 64 : i64, n_head = 4 : i64, n_layer = 2 : i64, n_positions = 32 : i64, tie_word_embeddings = true, vocab_size = 97 : i64}} {
  func.func @forward(%arg0: tensor<2x16xi64> {tfm.dims = ["batch", "seq"], tfm.name = "input_ids", tfm.role = #tfm<role input>}, %arg1: tensor<97x64xf32> {tfm.dims = ["vocab", "hidden"], tfm.name = "wte.weight", tfm.role = #tfm<role param>}, %arg2: tensor<32x64xf32> {tfm.dims = ["position", "hidden"], tfm.name = "wpe.weight", tfm.role = #tfm<role param>}, %arg3: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "h.0.ln_1.weight", tfm.role = #tfm<role param>}, %arg4: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "h.0.ln_1.bias", tfm.role = #tfm<role param>}, %arg5: tensor<64x192xf32> {tfm.dims = ["in", "out"], tfm.name = "h.0.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg6: tensor<192xf32> {tfm.dims = ["out"], tfm.name = "h.0.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg7: tensor<64x64xf32> {tfm.dims = ["in", "out"], tfm.name = "h.0.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg8: tensor<64xf32> {tfm.dims = ["out"], tfm.name = "h.0.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg9: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "h.0.ln_2.weight", tfm.role = #tfm<role param>}, %arg10: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "h.0.ln_2.bias", tfm.role = #tfm<role param>}, %arg11: tensor<64x256xf32> {tfm.dims = ["in", "out"], tfm.name = "h.0.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg12: tensor<256xf32> {tfm.dims = ["out"], tfm.name = "h.0.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg13: tensor<256x64xf32> {tfm.dims = ["in", "out"], tfm.name = "h.0.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg14: tensor<64xf32> {tfm.dims = ["out"], tfm.name = "h.0.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg15: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "h.1.ln_1.weight", tfm.role = #tfm<role param>}, %arg16: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "h.1.ln_1.bias", tfm.role = #tfm<role param>}, %arg17: tensor<64x192xf32> {tfm.dims = ["in", "out"], tfm.name = "h.1.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg18: tensor<192xf32> {tfm.dims = ["out"], tfm.name = "h.1.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg19: tensor<64x64xf32> {tfm.dims = ["in", "out"], tfm.name = "h.1.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg20: tensor<64xf32> {tfm.dims = ["out"], tfm.name = "h.1.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg21: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "h.1.ln_2.weight", tfm.role = #tfm<role param>}, %arg22: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "h.1.ln_2.bias", tfm.role = #tfm<role param>}, %arg23: tensor<64x256xf32> {tfm.dims = ["in", "out"], tfm.name = "h.1.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg24: tensor<256xf32> {tfm.dims = ["out"], tfm.name = "h.1.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg25: tensor<256x64xf32> {tfm.dims = ["in", "out"], tfm.name = "h.1.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg26: tensor<64xf32> {tfm.dims = ["out"], tfm.name = "h.1.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg27: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "ln_f.weight", tfm.role = #tfm<role param>}, %arg28: tensor<64xf32> {tfm.dims = ["hidden"], tfm.name = "ln_f.bias", tfm.role = #tfm<role param>}) -> tensor<2x16x97xf32> {
    %0 = tfm.embedding %arg1[%arg0] : tensor<97x64xf32>, tensor<2x16xi64> -> tensor<2x16x64xf32>
    %1 = tfm.arange start = 0 : tensor<16xi64>
    %2 = tfm.embedding %arg2[%1] : tensor<32x64xf32>, tensor<16xi64> -> tensor<16x64xf32>
    %3 = tfm.add %0, %2 : tensor<2x16x64xf32>, tensor<16x64xf32>
    %4 = tfm.layer 0 : tensor<2x16x64xf32> {
      %8 = tfm.layernorm %3, %arg3, %arg4 eps = 1.000000e-05 : tensor<2x16x64xf32>, tensor<64xf32>
      %9:3 = tfm.split %arg5 dim = 1 : tensor<64x192xf32> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
      %10:3 = tfm.split %arg6 dim = 0 : tensor<192xf32> -> tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
      %11 = tfm.matmul %8, %9#0 : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %12 = tfm.add %11, %10#0 : tensor<2x16x64xf32>, tensor<64xf32>
      %13 = tfm.split_heads %12 heads = 4 : tensor<2x16x64xf32> -> tensor<2x4x16x16xf32>
      %14 = tfm.matmul %8, %9#1 : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %15 = tfm.add %14, %10#1 : tensor<2x16x64xf32>, tensor<64xf32>
      %16 = tfm.split_heads %15 heads = 4 : tensor<2x16x64xf32> -> tensor<2x4x16x16xf32>
      %17 = tfm.matmul %8, %9#2 : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %18 = tfm.add %17, %10#2 : tensor<2x16x64xf32>, tensor<64xf32>
      %19 = tfm.split_heads %18 heads = 4 : tensor<2x16x64xf32> -> tensor<2x4x16x16xf32>
      %20 = tfm.attention %13, %16, %19 causal scale = 2.500000e-01 : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
      %21 = tfm.merge_heads %20 : tensor<2x4x16x16xf32> -> tensor<2x16x64xf32>
      %22 = tfm.matmul %21, %arg7 : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %23 = tfm.add %22, %arg8 : tensor<2x16x64xf32>, tensor<64xf32>
      %24 = tfm.add %3, %23 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
      %25 = tfm.layernorm %24, %arg9, %arg10 eps = 1.000000e-05 : tensor<2x16x64xf32>, tensor<64xf32>
      %26 = tfm.matmul %25, %arg11 : tensor<2x16x64xf32>, tensor<64x256xf32> -> tensor<2x16x256xf32>
      %27 = tfm.add %26, %arg12 : tensor<2x16x256xf32>, tensor<256xf32>
      %28 = tfm.gelu %27 tanh : tensor<2x16x256xf32>
      %29 = tfm.matmul %28, %arg13 : tensor<2x16x256xf32>, tensor<256x64xf32> -> tensor<2x16x64xf32>
      %30 = tfm.add %29, %arg14 : tensor<2x16x64xf32>, tensor<64xf32>
      %31 = tfm.add %24, %30 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
      tfm.yield %31 : tensor<2x16x64xf32>
    }
    %5 = tfm.layer 1 : tensor<2x16x64xf32> {
      %8 = tfm.layernorm %4, %arg15, %arg16 eps = 1.000000e-05 : tensor<2x16x64xf32>, tensor<64xf32>
      %9:3 = tfm.split %arg17 dim = 1 : tensor<64x192xf32> -> tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
      %10:3 = tfm.split %arg18 dim = 0 : tensor<192xf32> -> tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
      %11 = tfm.matmul %8, %9#0 : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %12 = tfm.add %11, %10#0 : tensor<2x16x64xf32>, tensor<64xf32>
      %13 = tfm.split_heads %12 heads = 4 : tensor<2x16x64xf32> -> tensor<2x4x16x16xf32>
      %14 = tfm.matmul %8, %9#1 : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %15 = tfm.add %14, %10#1 : tensor<2x16x64xf32>, tensor<64xf32>
      %16 = tfm.split_heads %15 heads = 4 : tensor<2x16x64xf32> -> tensor<2x4x16x16xf32>
      %17 = tfm.matmul %8, %9#2 : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %18 = tfm.add %17, %10#2 : tensor<2x16x64xf32>, tensor<64xf32>
      %19 = tfm.split_heads %18 heads = 4 : tensor<2x16x64xf32> -> tensor<2x4x16x16xf32>
      %20 = tfm.attention %13, %16, %19 causal scale = 2.500000e-01 : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
      %21 = tfm.merge_heads %20 : tensor<2x4x16x16xf32> -> tensor<2x16x64xf32>
      %22 = tfm.matmul %21, %arg19 : tensor<2x16x64xf32>, tensor<64x64xf32> -> tensor<2x16x64xf32>
      %23 = tfm.add %22, %arg20 : tensor<2x16x64xf32>, tensor<64xf32>
      %24 = tfm.add %4, %23 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
      %25 = tfm.layernorm %24, %arg21, %arg22 eps = 1.000000e-05 : tensor<2x16x64xf32>, tensor<64xf32>
      %26 = tfm.matmul %25, %arg23 : tensor<2x16x64xf32>, tensor<64x256xf32> -> tensor<2x16x256xf32>
      %27 = tfm.add %26, %arg24 : tensor<2x16x256xf32>, tensor<256xf32>
      %28 = tfm.gelu %27 tanh : tensor<2x16x256xf32>
      %29 = tfm.matmul %28, %arg25 : tensor<2x16x256xf32>, tensor<256x64xf32> -> tensor<2x16x64xf32>
      %30 = tfm.add %29, %arg26 : tensor<2x16x64xf32>, tensor<64xf32>
      %31 = tfm.add %24, %30 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
      tfm.yield %31 : tensor<2x16x64xf32>
    }
    %6 = tfm.layernorm %5, %arg27, %arg28 eps = 1.000000e-05 : tensor<2x16x64xf32>, tensor<64xf32>
    %7 = tfm.matmul %6, %arg1 transpose_rhs : tensor<2x16x64xf32>, tensor<97x64xf32> -> tensor<2x16x97xf32>
    return %7 : tensor<2x16x97xf32>
  }
}
