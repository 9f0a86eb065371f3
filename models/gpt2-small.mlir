// pmlir-gen gpt2 --layers 12 --hidden 768 --heads 12 --vocab 50257 --seq 128 --batch 1 --max-positions 1024
module attributes {tfm.huggingface_config = {activation_function = "gelu_new", architectures = ["GPT2LMHeadModel"], dtype = "float32", layer_norm_epsilon = 1.000000e-05 : f64, model_type = "gpt2", n_embd = 768 : i64, n_head = 12 : i64, n_layer = 12 : i64, n_positions = 1024 : i64, tie_word_embeddings = true, vocab_size = 50257 : i64}} {
  func.func @forward(%arg0: tensor<1x128xi64> {tfm.dims = ["batch", "seq"], tfm.name = "input_ids", tfm.role = #tfm<role input>}, %arg1: tensor<50257x768xf32> {tfm.dims = ["vocab", "hidden"], tfm.name = "wte.weight", tfm.role = #tfm<role param>}, %arg2: tensor<1024x768xf32> {tfm.dims = ["position", "hidden"], tfm.name = "wpe.weight", tfm.role = #tfm<role param>}, %arg3: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.0.ln_1.weight", tfm.role = #tfm<role param>}, %arg4: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.0.ln_1.bias", tfm.role = #tfm<role param>}, %arg5: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.0.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg6: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.0.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg7: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.0.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg8: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.0.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg9: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.0.ln_2.weight", tfm.role = #tfm<role param>}, %arg10: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.0.ln_2.bias", tfm.role = #tfm<role param>}, %arg11: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.0.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg12: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.0.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg13: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.0.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg14: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.0.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg15: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.1.ln_1.weight", tfm.role = #tfm<role param>}, %arg16: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.1.ln_1.bias", tfm.role = #tfm<role param>}, %arg17: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.1.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg18: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.1.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg19: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.1.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg20: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.1.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg21: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.1.ln_2.weight", tfm.role = #tfm<role param>}, %arg22: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.1.ln_2.bias", tfm.role = #tfm<role param>}, %arg23: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.1.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg24: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.1.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg25: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.1.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg26: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.1.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg27: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.2.ln_1.weight", tfm.role = #tfm<role param>}, %arg28: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.2.ln_1.bias", tfm.role = #tfm<role param>}, %arg29: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.2.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg30: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.2.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg31: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.2.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg32: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.2.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg33: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.2.ln_2.weight", tfm.role = #tfm<role param>}, %arg34: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.2.ln_2.bias", tfm.role = #tfm<role param>}, %arg35: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.2.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg36: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.2.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg37: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.2.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg38: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.2.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg39: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.3.ln_1.weight", tfm.role = #tfm<role param>}, %arg40: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.3.ln_1.bias", tfm.role = #tfm<role param>}, %arg41: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.3.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg42: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.3.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg43: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.3.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg44: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.3.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg45: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.3.ln_2.weight", tfm.role = #tfm<role param>}, %arg46: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.3.ln_2.bias", tfm.role = #tfm<role param>}, %arg47: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.3.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg48: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.3.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg49: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.3.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg50: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.3.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg51: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.4.ln_1.weight", tfm.role = #tfm<role param>}, %arg52: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.4.ln_1.bias", tfm.role = #tfm<role param>}, %arg53: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.4.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg54: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.4.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg55: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.4.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg56: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.4.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg57: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.4.ln_2.weight", tfm.role = #tfm<role param>}, %arg58: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.4.ln_2.bias", tfm.role = #tfm<role param>}, %arg59: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.4.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg60: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.4.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg61: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.4.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg62: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.4.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg63: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.5.ln_1.weight", tfm.role = #tfm<role param>}, %arg64: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.5.ln_1.bias", tfm.role = #tfm<role param>}, %arg65: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.5.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg66: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.5.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg67: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.5.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg68: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.5.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg69: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.5.ln_2.weight", tfm.role = #tfm<role param>}, %arg70: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.5.ln_2.bias", tfm.role = #tfm<role param>}, %arg71: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.5.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg72: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.5.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg73: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.5.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg74: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.5.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg75: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.6.ln_1.weight", tfm.role = #tfm<role param>}, %arg76: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.6.ln_1.bias", tfm.role = #tfm<role param>}, %arg77: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.6.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg78: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.6.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg79: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.6.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg80: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.6.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg81: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.6.ln_2.weight", tfm.role = #tfm<role param>}, %arg82: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.6.ln_2.bias", tfm.role = #tfm<role param>}, %arg83: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.6.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg84: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.6.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg85: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.6.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg86: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.6.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg87: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.7.ln_1.weight", tfm.role = #tfm<role param>}, %arg88: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.7.ln_1.bias", tfm.role = #tfm<role param>}, %arg89: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.7.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg90: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.7.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg91: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.7.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg92: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.7.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg93: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.7.ln_2.weight", tfm.role = #tfm<role param>}, %arg94: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.7.ln_2.bias", tfm.role = #tfm<role param>}, %arg95: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.7.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg96: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.7.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg97: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.7.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg98: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.7.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg99: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.8.ln_1.weight", tfm.role = #tfm<role param>}, %arg100: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.8.ln_1.bias", tfm.role = #tfm<role param>}, %arg101: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.8.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg102: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.8.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg103: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.8.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg104: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.8.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg105: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.8.ln_2.weight", tfm.role = #tfm<role param>}, %arg106: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.8.ln_2.bias", tfm.role = #tfm<role param>}, %arg107: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.8.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg108: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.8.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg109: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.8.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg110: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.8.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg111: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.9.ln_1.weight", tfm.role = #tfm<role param>}, %arg112: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.9.ln_1.bias", tfm.role = #tfm<role param>}, %arg113: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.9.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg114: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.9.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg115: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.9.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg116: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.9.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg117: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.9.ln_2.weight", tfm.role = #tfm<role param>}, %arg118: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.9.ln_2.bias", tfm.role = #tfm<role param>}, %arg119: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.9.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg120: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.9.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg121: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.9.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg122: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.9.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg123: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.10.ln_1.weight", tfm.role = #tfm<role param>}, %arg124: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.10.ln_1.bias", tfm.role = #tfm<role param>}, %arg125: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.10.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg126: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.10.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg127: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.10.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg128: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.10.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg129: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.10.ln_2.weight", tfm.role = #tfm<role param>}, %arg130: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.10.ln_2.bias", tfm.role = #tfm<role param>}, %arg131: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.10.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg132: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.10.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg133: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.10.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg134: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.10.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg135: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.11.ln_1.weight", tfm.role = #tfm<role param>}, %arg136: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.11.ln_1.bias", tfm.role = #tfm<role param>}, %arg137: tensor<768x2304xf32> {tfm.dims = ["in", "out"], tfm.name = "h.11.attn.c_attn.weight", tfm.role = #tfm<role param>}, %arg138: tensor<2304xf32> {tfm.dims = ["out"], tfm.name = "h.11.attn.c_attn.bias", tfm.role = #tfm<role param>}, %arg139: tensor<768x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.11.attn.c_proj.weight", tfm.role = #tfm<role param>}, %arg140: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.11.attn.c_proj.bias", tfm.role = #tfm<role param>}, %arg141: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.11.ln_2.weight", tfm.role = #tfm<role param>}, %arg142: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "h.11.ln_2.bias", tfm.role = #tfm<role param>}, %arg143: tensor<768x3072xf32> {tfm.dims = ["in", "out"], tfm.name = "h.11.mlp.c_fc.weight", tfm.role = #tfm<role param>}, %arg144: tensor<3072xf32> {tfm.dims = ["out"], tfm.name = "h.11.mlp.c_fc.bias", tfm.role = #tfm<role param>}, %arg145: tensor<3072x768xf32> {tfm.dims = ["in", "out"], tfm.name = "h.11.mlp.c_proj.weight", tfm.role = #tfm<role param>}, %arg146: tensor<768xf32> {tfm.dims = ["out"], tfm.name = "h.11.mlp.c_proj.bias", tfm.role = #tfm<role param>}, %arg147: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "ln_f.weight", tfm.role = #tfm<role param>}, %arg148: tensor<768xf32> {tfm.dims = ["hidden"], tfm.name = "ln_f.bias", tfm.role = #tfm<role param>}) -> tensor<1x128x50257xf32> {
    %0 = tfm.embedding %arg1[%arg0] : tensor<50257x768xf32>, tensor<1x128xi64> -> tensor<1x128x768xf32>
    %1 = tfm.arange start = 0 : tensor<128xi64>
    %2 = tfm.embedding %arg2[%1] : tensor<1024x768xf32>, tensor<128xi64> -> tensor<128x768xf32>
    %3 = tfm.add %0, %2 : tensor<1x128x768xf32>, tensor<128x768xf32>
    %4 = tfm.layer 0 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %3, %arg3, %arg4 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg5 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg6 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg7 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg8 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %3, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg9, %arg10 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg11 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg12 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg13 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg14 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %5 = tfm.layer 1 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %4, %arg15, %arg16 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg17 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg18 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg19 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg20 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %4, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg21, %arg22 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg23 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg24 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg25 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg26 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %6 = tfm.layer 2 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %5, %arg27, %arg28 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg29 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg30 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg31 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg32 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %5, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg33, %arg34 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg35 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg36 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg37 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg38 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %7 = tfm.layer 3 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %6, %arg39, %arg40 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg41 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg42 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg43 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg44 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %6, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg45, %arg46 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg47 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg48 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg49 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg50 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %8 = tfm.layer 4 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %7, %arg51, %arg52 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg53 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg54 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg55 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg56 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %7, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg57, %arg58 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg59 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg60 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg61 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg62 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %9 = tfm.layer 5 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %8, %arg63, %arg64 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg65 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg66 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg67 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg68 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %8, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg69, %arg70 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg71 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg72 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg73 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg74 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %10 = tfm.layer 6 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %9, %arg75, %arg76 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg77 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg78 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg79 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg80 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %9, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg81, %arg82 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg83 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg84 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg85 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg86 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %11 = tfm.layer 7 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %10, %arg87, %arg88 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg89 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg90 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg91 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg92 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %10, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg93, %arg94 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg95 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg96 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg97 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg98 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %12 = tfm.layer 8 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %11, %arg99, %arg100 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg101 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg102 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg103 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg104 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %11, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg105, %arg106 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg107 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg108 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg109 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg110 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %13 = tfm.layer 9 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %12, %arg111, %arg112 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg113 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg114 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg115 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg116 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %12, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg117, %arg118 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg119 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg120 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg121 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg122 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %14 = tfm.layer 10 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %13, %arg123, %arg124 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg125 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg126 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg127 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg128 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %13, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg129, %arg130 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg131 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg132 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg133 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg134 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %15 = tfm.layer 11 : tensor<1x128x768xf32> {
      %18 = tfm.layernorm %14, %arg135, %arg136 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %19:3 = tfm.split %arg137 dim = 1 : tensor<768x2304xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>
      %20:3 = tfm.split %arg138 dim = 0 : tensor<2304xf32> -> tensor<768xf32>, tensor<768xf32>, tensor<768xf32>
      %21 = tfm.matmul %18, %19#0 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %22 = tfm.add %21, %20#0 : tensor<1x128x768xf32>, tensor<768xf32>
      %23 = tfm.split_heads %22 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %24 = tfm.matmul %18, %19#1 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %25 = tfm.add %24, %20#1 : tensor<1x128x768xf32>, tensor<768xf32>
      %26 = tfm.split_heads %25 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %27 = tfm.matmul %18, %19#2 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %28 = tfm.add %27, %20#2 : tensor<1x128x768xf32>, tensor<768xf32>
      %29 = tfm.split_heads %28 heads = 12 : tensor<1x128x768xf32> -> tensor<1x12x128x64xf32>
      %30 = tfm.attention %23, %26, %29 causal scale = 1.250000e-01 : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32> -> tensor<1x12x128x64xf32>
      %31 = tfm.merge_heads %30 : tensor<1x12x128x64xf32> -> tensor<1x128x768xf32>
      %32 = tfm.matmul %31, %arg139 : tensor<1x128x768xf32>, tensor<768x768xf32> -> tensor<1x128x768xf32>
      %33 = tfm.add %32, %arg140 : tensor<1x128x768xf32>, tensor<768xf32>
      %34 = tfm.add %14, %33 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      %35 = tfm.layernorm %34, %arg141, %arg142 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
      %36 = tfm.matmul %35, %arg143 : tensor<1x128x768xf32>, tensor<768x3072xf32> -> tensor<1x128x3072xf32>
      %37 = tfm.add %36, %arg144 : tensor<1x128x3072xf32>, tensor<3072xf32>
      %38 = tfm.gelu %37 tanh : tensor<1x128x3072xf32>
      %39 = tfm.matmul %38, %arg145 : tensor<1x128x3072xf32>, tensor<3072x768xf32> -> tensor<1x128x768xf32>
      %40 = tfm.add %39, %arg146 : tensor<1x128x768xf32>, tensor<768xf32>
      %41 = tfm.add %34, %40 : tensor<1x128x768xf32>, tensor<1x128x768xf32>
      tfm.yield %41 : tensor<1x128x768xf32>
    }
    %16 = tfm.layernorm %15, %arg147, %arg148 eps = 1.000000e-05 : tensor<1x128x768xf32>, tensor<768xf32>
    %17 = tfm.matmul %16, %arg1 transpose_rhs : tensor<1x128x768xf32>, tensor<50257x768xf32> -> tensor<1x128x50257xf32>
    return %17 : tensor<1x128x50257xf32>
  }
}
