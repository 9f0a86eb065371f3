// RUN: pmlir-opt %s --pmlir-convert-tfm-to-linalg --pmlir-fuse-elementwise --pmlir-store-bf16 --canonicalize --split-input-file | FileCheck %s

// Between the GEMMs of an MLP the tensors are bf16; the bias and GELU
// compute in f32 and round what they write; the GEMMs read bf16 operands
// (the weights and the argument rounded once each), sum in f32 and round
// once where they are stored; the result leaves in f32.
// CHECK-LABEL: func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[W1:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32xf32>, %[[W2:.*]]: tensor<32x16xf32>) -> tensor<4x16xf32>
// CHECK: %[[W2H:.*]] = linalg.generic {{.*}} ins(%[[W2]] : tensor<32x16xf32>) outs(%{{.*}} : tensor<32x16xbf16>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: bf16):
// CHECK-NEXT:   %[[T:.*]] = arith.truncf %[[IN]] : f32 to bf16
// CHECK-NEXT:   linalg.yield %[[T]] : bf16
// CHECK: %[[W1H:.*]] = linalg.generic {{.*}} ins(%[[W1]] : tensor<16x32xf32>) outs(%{{.*}} : tensor<16x32xbf16>)
// CHECK: %[[XH:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<4x16xf32>) outs(%{{.*}} : tensor<4x16xbf16>)
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : bf16) outs(%{{.*}} : tensor<4x32xbf16>)
// CHECK: %[[H:.*]] = linalg.generic {{.*}}["parallel", "parallel", "reduction"]} ins(%[[XH]], %[[W1H]] : tensor<4x16xbf16>, tensor<16x32xbf16>) outs(%[[ZERO]] : tensor<4x32xbf16>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: bf16, %[[Bv:.*]]: bf16, %[[ACC:.*]]: bf16):
// CHECK-DAG:   %[[AF:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-DAG:   %[[BF:.*]] = arith.extf %[[Bv]] : bf16 to f32
// CHECK-DAG:   %[[ACCF:.*]] = arith.extf %[[ACC]] : bf16 to f32
// CHECK:   %[[P:.*]] = arith.mulf %[[AF]], %[[BF]] : f32
// CHECK:   %[[S:.*]] = arith.addf %[[ACCF]], %[[P]] : f32
// CHECK:   %[[R:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK:   linalg.yield %[[R]] : bf16
// CHECK: %[[G:.*]] = linalg.generic {{.*}} ins(%[[H]], %[[B]] : tensor<4x32xbf16>, tensor<32xf32>) outs(%{{.*}} : tensor<4x32xbf16>)
// CHECK-NEXT: ^bb0(%[[HV:.*]]: bf16, %{{.*}}: f32, %{{.*}}: bf16):
// CHECK-NEXT:   arith.extf %[[HV]] : bf16 to f32
// CHECK:        math.tanh {{.*}} : f32
// CHECK:        arith.truncf {{.*}} : f32 to bf16
// CHECK: %[[Y:.*]] = linalg.generic {{.*}} ins(%[[G]], %[[W2H]] : tensor<4x32xbf16>, tensor<32x16xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK:   arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:   linalg.yield %{{.*}} : f32
// CHECK: return %[[Y]] : tensor<4x16xf32>
func.func @mlp(%x: tensor<4x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x16xf32>) -> tensor<4x16xf32> {
  %h = tfm.matmul %x, %w1 : tensor<4x16xf32>, tensor<16x32xf32> -> tensor<4x32xf32>
  %z = tfm.add %h, %b1 : tensor<4x32xf32>, tensor<32xf32>
  %g = tfm.gelu %z tanh : tensor<4x32xf32>
  %y = tfm.matmul %g, %w2 : tensor<4x32xf32>, tensor<32x16xf32> -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// A norm's statistics are sums: f32, read from the bf16 residual.
// CHECK-LABEL: func @norm_statistics_stay_f32
// CHECK: %[[RES:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x16xbf16>)
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}}["parallel", "reduction"]} ins(%[[RES]] : tensor<4x16xbf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[V:.*]]: bf16, %[[O:.*]]: f32):
// CHECK-NEXT:   %[[VF:.*]] = arith.extf %[[V]] : bf16 to f32
// CHECK-NEXT:   %[[SQV:.*]] = arith.mulf %[[VF]], %[[VF]] : f32
// CHECK-NEXT:   arith.addf %[[O]], %[[SQV]] fastmath<reassoc> : f32
// CHECK: linalg.generic {{.*}} ins(%[[RES]], %[[SQ]], %{{.*}} : tensor<4x16xbf16>, tensor<4xf32>, tensor<16xf32>) outs(%{{.*}} : tensor<4x16xbf16>)
func.func @norm_statistics_stay_f32(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %g: tensor<16xf32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %r = tfm.add %x, %y : tensor<4x16xf32>, tensor<4x16xf32>
  %n = tfm.rmsnorm %r, %g eps = 1.0e-06 : tensor<4x16xf32>, tensor<16xf32>
  %o = tfm.matmul %n, %w : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}

// -----

// What elementwise work computes from statistics alone is a statistic too:
// the layer norm gradient's mean and reciprocal deviation (each with two
// consumers, so not fused into them) stay f32, as do the sums they come
// from.
// CHECK-LABEL: func @derived_statistics_stay_f32
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}["parallel", "reduction"]} ins(%{{.*}} : tensor<4x16xbf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}}["parallel"]} ins(%[[SUM]] : tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NOT: arith.truncf
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}}["parallel", "reduction"]} ins(%{{.*}}, %[[MEAN]] : tensor<4x16xbf16>, tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[RSTD:.*]] = linalg.generic {{.*}}["parallel"]} ins(%[[SQ]] : tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NOT: arith.truncf
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[RSTD]], %[[MEAN]] : {{.*}}, tensor<4xf32>, tensor<4xf32>)
func.func @derived_statistics_stay_f32(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %g: tensor<16xf32>, %dy: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = tfm.add %x, %y : tensor<4x16xf32>, tensor<4x16xf32>
  %dx = tfm.layernorm_grad %r, %g, %dy eps = 1.0e-05 : tensor<4x16xf32>, tensor<16xf32>
  return %dx : tensor<4x16xf32>
}

// -----

// What a call takes or a function returns stays f32: a layer's interface
// and the runtime's do not change.
// CHECK-LABEL: func @what_leaves_stays_f32
// CHECK-NOT: bf16
// CHECK: return
func.func private @layer(tensor<4x16xf32>) -> tensor<4x16xf32>

func.func @what_leaves_stays_f32(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %a = tfm.add %x, %y : tensor<4x16xf32>, tensor<4x16xf32>
  %c = func.call @layer(%a) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = tfm.gelu %c tanh : tensor<4x16xf32>
  return %c, %b : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Heads split by a reshape and a transpose move bf16 data: the score GEMM
// reads them as they are.
// CHECK-LABEL: func @heads_move_bf16
// CHECK: tensor.expand_shape %{{.*}} : tensor<2x4x8xbf16> into tensor<2x4x2x4xbf16>
// CHECK: %[[Q:.*]] = linalg.transpose ins(%{{.*}} : tensor<2x4x2x4xbf16>) outs(%{{.*}} : tensor<2x2x4x4xbf16>)
// CHECK: linalg.generic {{.*}} ins(%[[Q]], %[[Q]] : tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>) outs(%{{.*}} : tensor<2x2x4x4xf32>)
func.func @heads_move_bf16(%x: tensor<2x4x8xf32>, %b: tensor<8xf32>) -> tensor<2x2x4x4xf32> {
  %y = tfm.add %x, %b : tensor<2x4x8xf32>, tensor<8xf32>
  %q = tfm.split_heads %y heads = 2 : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %s = tfm.matmul %q, %q transpose_rhs : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32> -> tensor<2x2x4x4xf32>
  return %s : tensor<2x2x4x4xf32>
}

// -----

// A GEMM that adds into a buffer it does not start from zero (a gradient
// accumulated over microbatches) keeps its f32 sum: bf16 operands, f32
// result.
// CHECK-LABEL: func @accumulating_gemm
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>, %[[ACC:.*]]: tensor<4x16xf32>)
// CHECK: %[[BH:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8x16xbf16>)
// CHECK: %[[AH:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[AH]], %[[BH]] : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%[[ACC]] : tensor<4x16xf32>)
// CHECK: return %[[R]]
#lhs = affine_map<(m, n, k) -> (m, k)>
#rhs = affine_map<(m, n, k) -> (k, n)>
#out = affine_map<(m, n, k) -> (m, n)>
func.func @accumulating_gemm(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %acc: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = linalg.generic {indexing_maps = [#lhs, #rhs, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%acc : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// A tensor read by tensor.extract (a gathered table) stays f32.
// CHECK-LABEL: func @extracted_stays_f32
// CHECK-NOT: bf16
// CHECK: return
func.func @extracted_stays_f32(%t: tensor<8x4xf32>, %u: tensor<8x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  %s = tfm.add %t, %u : tensor<8x4xf32>, tensor<8x4xf32>
  %e = tfm.embedding %s[%ids] : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
  return %e : tensor<3x4xf32>
}
