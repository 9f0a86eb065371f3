// Every tfm gradient op parses, prints and round-trips, in the custom and the
// generic form.
// RUN: pmlir-opt %s | pmlir-opt | FileCheck %s
// RUN: pmlir-opt %s --mlir-print-op-generic | pmlir-opt | FileCheck %s

// CHECK-LABEL: func @linear_gradients
func.func @linear_gradients(%x: tensor<2x7x16xf32>, %dy: tensor<2x7x13xf32>, %a: tensor<16x5xf32>,
                            %b: tensor<16x5xf32>)
    -> (tensor<16x13xf32>, tensor<13xf32>, tensor<7x13xf32>, tensor<16x10xf32>, tensor<4xbf16>) {
  // CHECK: tfm.weight_grad %{{.*}}, %{{.*}} : tensor<2x7x16xf32>, tensor<2x7x13xf32> -> tensor<16x13xf32>
  %0 = tfm.weight_grad %x, %dy : tensor<2x7x16xf32>, tensor<2x7x13xf32> -> tensor<16x13xf32>
  // CHECK: tfm.sum_leading %{{.*}} : tensor<2x7x13xf32> -> tensor<13xf32>
  %1 = tfm.sum_leading %dy : tensor<2x7x13xf32> -> tensor<13xf32>
  // CHECK: tfm.sum_leading %{{.*}} : tensor<2x7x13xf32> -> tensor<7x13xf32>
  %2 = tfm.sum_leading %dy : tensor<2x7x13xf32> -> tensor<7x13xf32>
  // CHECK: tfm.concat %{{.*}}, %{{.*}} dim = 1 : tensor<16x5xf32>, tensor<16x5xf32> -> tensor<16x10xf32>
  %3 = tfm.concat %a, %b dim = 1 : tensor<16x5xf32>, tensor<16x5xf32> -> tensor<16x10xf32>
  // CHECK: tfm.fill 1.000000e+00 : tensor<4xbf16>
  %4 = tfm.fill 1.0 : tensor<4xbf16>
  return %0, %1, %2, %3, %4 : tensor<16x13xf32>, tensor<13xf32>, tensor<7x13xf32>, tensor<16x10xf32>, tensor<4xbf16>
}

// CHECK-LABEL: func @activation_and_norm_gradients
func.func @activation_and_norm_gradients(%x: tensor<2x7x16xf32>, %dy: tensor<2x7x16xf32>,
                                         %g: tensor<16xf32>) -> tensor<2x7x16xf32> {
  // CHECK: tfm.gelu_grad %{{.*}}, %{{.*}} tanh : tensor<2x7x16xf32>
  %0 = tfm.gelu_grad %x, %dy tanh : tensor<2x7x16xf32>
  // CHECK: tfm.gelu_grad %{{.*}}, %{{.*}} erf : tensor<2x7x16xf32>
  %1 = tfm.gelu_grad %x, %0 erf : tensor<2x7x16xf32>
  // CHECK: tfm.silu_grad %{{.*}}, %{{.*}} : tensor<2x7x16xf32>
  %2 = tfm.silu_grad %x, %1 : tensor<2x7x16xf32>
  // CHECK: tfm.softmax_grad %{{.*}}, %{{.*}} : tensor<2x7x16xf32>
  %3 = tfm.softmax_grad %x, %2 : tensor<2x7x16xf32>
  // CHECK: tfm.layernorm_grad %{{.*}}, %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x7x16xf32>, tensor<16xf32>
  %4 = tfm.layernorm_grad %x, %g, %3 eps = 1.0e-05 : tensor<2x7x16xf32>, tensor<16xf32>
  // CHECK: tfm.rmsnorm_grad %{{.*}}, %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 : tensor<2x7x16xf32>, tensor<16xf32>
  %5 = tfm.rmsnorm_grad %x, %g, %4 eps = 1.0e-06 : tensor<2x7x16xf32>, tensor<16xf32>
  // CHECK: tfm.layernorm_weight_grad %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<2x7x16xf32> -> tensor<16xf32>
  %6 = tfm.layernorm_weight_grad %x, %5 eps = 1.0e-05 : tensor<2x7x16xf32> -> tensor<16xf32>
  // CHECK: tfm.rmsnorm_weight_grad %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 : tensor<2x7x16xf32> -> tensor<16xf32>
  %7 = tfm.rmsnorm_weight_grad %x, %5 eps = 1.0e-06 : tensor<2x7x16xf32> -> tensor<16xf32>
  return %5 : tensor<2x7x16xf32>
}

// CHECK-LABEL: func @embedding_attention_rope_gradients
func.func @embedding_attention_rope_gradients(%dy: tensor<2x7x16xf32>, %ids: tensor<2x7xi64>,
    %q: tensor<2x4x7x8xf32>, %k: tensor<2x2x7x8xf32>, %v: tensor<2x2x7x8xf32>,
    %do: tensor<2x4x7x8xf32>, %o: index) -> tensor<2x4x7x8xf32> {
  // CHECK: tfm.embedding_grad %{{.*}}[%{{.*}}] : tensor<2x7x16xf32>, tensor<2x7xi64> -> tensor<97x16xf32>
  %0 = tfm.embedding_grad %dy[%ids] : tensor<2x7x16xf32>, tensor<2x7xi64> -> tensor<97x16xf32>
  // CHECK: tfm.embedding_grad %{{.*}}[%{{.*}}] rows_from %{{.*}} : tensor<2x7x16xf32>, tensor<2x7xi64> -> tensor<49x16xf32>
  %1 = tfm.embedding_grad %dy[%ids] rows_from %o : tensor<2x7x16xf32>, tensor<2x7xi64> -> tensor<49x16xf32>
  // CHECK: tfm.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal query_offset %{{.*}} scale = 3.500000e-01
  %2:3 = tfm.attention_grad %q, %k, %v, %do causal query_offset %o scale = 0.35
      : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x4x7x8xf32>
      -> tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>
  // CHECK: tfm.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} probabilities %{{.*}} causal scale = 3.500000e-01 : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x4x7x8xf32>, tensor<2x4x7x7xf32>
  %p = tfm.fill 0.0 : tensor<2x4x7x7xf32>
  %4:3 = tfm.attention_grad %q, %k, %v, %do probabilities %p causal scale = 0.35
      : tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x4x7x8xf32>,
        tensor<2x4x7x7xf32>
      -> tensor<2x4x7x8xf32>, tensor<2x2x7x8xf32>, tensor<2x2x7x8xf32>
  %pos = tfm.arange start = 0 : tensor<7xi64>
  // CHECK: tfm.rope %{{.*}}, %{{.*}} theta = 1.000000e+04 inverse : tensor<2x4x7x8xf32>, tensor<7xi64>
  %3 = tfm.rope %2#0, %pos theta = 1.0e+04 inverse : tensor<2x4x7x8xf32>, tensor<7xi64>
  return %3 : tensor<2x4x7x8xf32>
}

// CHECK-LABEL: func @loss_gradients
func.func @loss_gradients(%logits: tensor<2x7x97xf32>, %block: tensor<2x7x49xf32>,
                          %labels: tensor<2x7xi64>, %dloss: tensor<f32>, %max: tensor<2x7xf32>,
                          %parts: tensor<2x7x2xf32>, %from: index)
    -> (tensor<2x7x97xf32>, tensor<2x7x49xf32>) {
  // CHECK: tfm.count_tokens %{{.*}} ignore_index = -100 : tensor<2x7xi64> -> tensor<f32>
  %n = tfm.count_tokens %labels ignore_index = -100 : tensor<2x7xi64> -> tensor<f32>
  // CHECK: tfm.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} ignore_index = -100 : tensor<2x7x97xf32>, tensor<2x7xi64>, tensor<f32>, tensor<f32>
  %0 = tfm.cross_entropy_grad %logits, %labels, %dloss, %n ignore_index = -100
      : tensor<2x7x97xf32>, tensor<2x7xi64>, tensor<f32>, tensor<f32>
  // CHECK: tfm.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} normalized by %{{.*}}, %{{.*}} vocab_from %{{.*}} vocab = 97 ignore_index = -100
  %1 = tfm.cross_entropy_grad %block, %labels, %dloss, %n normalized by %max, %parts
      vocab_from %from vocab = 97 ignore_index = -100
      : tensor<2x7x49xf32>, tensor<2x7xi64>, tensor<f32>, tensor<f32>, tensor<2x7xf32>, tensor<2x7x2xf32>
  return %0, %1 : tensor<2x7x97xf32>, tensor<2x7x49xf32>
}

// CHECK-LABEL: func @backward_layer
func.func @backward_layer(%x: tensor<2x7x16xf32>) -> tensor<2x7x16xf32> {
  // CHECK: tfm.layer 3 backward : tensor<2x7x16xf32>
  %0 = tfm.layer 3 backward : tensor<2x7x16xf32> {
    tfm.yield %x : tensor<2x7x16xf32>
  }
  return %0 : tensor<2x7x16xf32>
}
