// RUN: pmlir-opt %s --pmlir-sharding-propagation --split-input-file --verify-diagnostics | FileCheck %s

// Megatron's MLP: fc1 column-parallel makes the hidden activation (and the
// bias it meets) split over tp; fc2 row-parallel contracts over the split
// dimension, so its output is a sum pending over tp; adding the replicated
// bias needs the full value, so the pending sum stops there.
// CHECK-LABEL: func @megatron_mlp
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], []]>}
// CHECK-SAME: %{{.*}}: tensor<32xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}"tp"]]>}
// CHECK-SAME: -> (tensor<4x8xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], []]>})
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @megatron_mlp(%x: tensor<4x8xf32>,
                          %w1: tensor<8x32xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
                          %b1: tensor<32xf32>,
                          %w2: tensor<32x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>},
                          %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    // CHECK: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], ["tp"]]>]}
    %h = tfm.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    // CHECK: tfm.add {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], ["tp"]]>]}
    %hb = tfm.add %h, %b1 : tensor<4x32xf32>, tensor<32xf32>
    // CHECK: tfm.gelu {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], ["tp"]]>]}
    %g = tfm.gelu %hb tanh : tensor<4x32xf32>
    // CHECK: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], []], pending = ["tp"]>]}
    %y = tfm.matmul %g, %w2 : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    // A scale is linear: the sum stays pending.
    // CHECK: tfm.scale {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], []], pending = ["tp"]>]}
    %s = tfm.scale %y, 2.0 : tensor<4x8xf32>
    // CHECK: tfm.add {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], []]>]}
    %z = tfm.add %s, %b2 : tensor<4x8xf32>, tensor<8xf32>
    return %z : tensor<4x8xf32>
  }
}

// -----

// Attention by heads: the column-parallel projection splits the hidden
// dimension, whose major factor is the heads, so split_heads, attention and
// merge_heads all work on tp's share of heads; the batch follows dp from
// the input ids through the embedding. Vocab-parallel embedding: the table
// split on the vocabulary gives a sum pending over tp.
// CHECK-LABEL: func @heads_and_vocab
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  func.func @heads_and_vocab(%ids: tensor<4x16xi64> {tfm.sharding = #tfm.sharding<[["dp"], []]>},
                             %wte: tensor<96x64xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>},
                             %wq: tensor<64x64xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
                             %wo: tensor<64x64xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>}) -> tensor<4x16x64xf32> {
    // CHECK: tfm.embedding {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []], pending = ["tp"]>]}
    %e = tfm.embedding %wte[%ids] : tensor<96x64xf32>, tensor<4x16xi64> -> tensor<4x16x64xf32>
    // CHECK: tfm.layernorm {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []]>]}
    %g = arith.constant dense<1.0> : tensor<64xf32>
    %b = arith.constant dense<0.0> : tensor<64xf32>
    %n = tfm.layernorm %e, %g, %b eps = 1.0e-05 : tensor<4x16x64xf32>, tensor<64xf32>
    // CHECK: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], ["tp"]]>]}
    %q = tfm.matmul %n, %wq : tensor<4x16x64xf32>, tensor<64x64xf32> -> tensor<4x16x64xf32>
    // CHECK: tfm.split_heads {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], ["tp"], [], []]>]}
    %qh = tfm.split_heads %q heads = 4 : tensor<4x16x64xf32> -> tensor<4x4x16x16xf32>
    // CHECK: tfm.attention {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], ["tp"], [], []]>]}
    %o = tfm.attention %qh, %qh, %qh causal scale = 0.25 : tensor<4x4x16x16xf32>, tensor<4x4x16x16xf32>, tensor<4x4x16x16xf32> -> tensor<4x4x16x16xf32>
    // CHECK: tfm.merge_heads {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], ["tp"]]>]}
    %m = tfm.merge_heads %o : tensor<4x4x16x16xf32> -> tensor<4x16x64xf32>
    // CHECK: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], [], []], pending = ["tp"]>]}
    %y = tfm.matmul %m, %wo : tensor<4x16x64xf32>, tensor<64x64xf32> -> tensor<4x16x64xf32>
    return %y : tensor<4x16x64xf32>
  }
}

// -----

// A conflict: tp cannot split both a matmul's contracting dimension (as x
// proposes) and its output columns (as w proposes). The factor backed by
// more bytes gets it, so the larger tensor keeps its layout and only the
// smaller one is resharded (a warning says so). x is 256 KiB here and w
// 64 KiB: the result is a sum pending over tp.
// CHECK-LABEL: func @conflict_goes_to_the_heavier_tensor
module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  func.func @conflict_goes_to_the_heavier_tensor(
      %x: tensor<64x1024xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
      %w: tensor<1024x16xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) -> tensor<64x16xf32> {
    // CHECK: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], []], pending = ["tp"]>]}
    // expected-warning @+1 {{the user sharding of argument #1 (#tfm.sharding<[[], ["tp"]]>, 65536 bytes) conflicts with argument #0 (#tfm.sharding<[[], ["tp"]]>, 262144 bytes) here; the latter is backed by more tensor bytes and wins, the former is resharded}}
    %y = tfm.matmul %x, %w : tensor<64x1024xf32>, tensor<1024x16xf32> -> tensor<64x16xf32>
    return %y : tensor<64x16xf32>
  }
  // The same with w at 4 MiB: the output columns take tp.
  // CHECK-LABEL: func @conflict_the_other_way
  func.func @conflict_the_other_way(
      %x: tensor<64x1024xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
      %w: tensor<1024x1024xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) -> tensor<64x1024xf32> {
    // CHECK: tfm.matmul {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], ["tp"]]>]}
    // expected-warning @+1 {{the user sharding of argument #0 (#tfm.sharding<[[], ["tp"]]>, 262144 bytes) conflicts with argument #1}}
    %y = tfm.matmul %x, %w : tensor<64x1024xf32>, tensor<1024x1024xf32> -> tensor<64x1024xf32>
    return %y : tensor<64x1024xf32>
  }
}

// -----

// Layer results are the yielded values; a constraint pins a value and its
// sharding flows on.
// CHECK-LABEL: func @through_a_layer
module attributes {tfm.mesh = #tfm.mesh<dp = 2>} {
  func.func @through_a_layer(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // CHECK: tfm.layer 0 {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], []]>]}
    %l = tfm.layer 0 : tensor<4x8xf32> {
      // CHECK: tfm.sharding_constraint {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], []]>]}
      %c = tfm.sharding_constraint %x to <[["dp"], []]> : tensor<4x8xf32>
      // CHECK: tfm.gelu {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], []]>]}
      %g = tfm.gelu %c tanh : tensor<4x8xf32>
      tfm.yield %g : tensor<4x8xf32>
    }
    // CHECK: tfm.softmax {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"dp"], []]>]}
    %s = tfm.softmax %l : tensor<4x8xf32>
    return %s : tensor<4x8xf32>
  }
}

// -----

// A norm's hidden dimension needs the whole row: a split there does not
// pass through.
// CHECK-LABEL: func @norm_replicates_its_hidden_dim
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @norm_replicates_its_hidden_dim(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}, %g: tensor<8xf32>) -> tensor<4x8xf32> {
    // CHECK: tfm.rmsnorm {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], []]>]}
    %n = tfm.rmsnorm %x, %g eps = 1.0e-06 : tensor<4x8xf32>, tensor<8xf32>
    return %n : tensor<4x8xf32>
  }
}

// -----

// A closed dimension stays as the user wrote it; an open one may be split
// further, and the annotation is rewritten to what propagation chose.
// CHECK-LABEL: func @open_dimension
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}"dp"], ["tp"]]>}
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]]>}
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  func.func @open_dimension(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[["dp"], []]>},
                            %open: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]], open = [0]>},
                            %closed: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) -> tensor<4x8xf32> {
    %a = tfm.add %x, %open : tensor<4x8xf32>, tensor<4x8xf32>
    %b = tfm.add %a, %closed : tensor<4x8xf32>, tensor<4x8xf32>
    return %b : tensor<4x8xf32>
  }
}

// -----

// Equal bytes propose tp for the rows (x) and for the columns (y): by
// default the first factor wins; priority 0 on y and 1 on x lets y's
// layout reach the sum first.
// CHECK-LABEL: func @tie
// CHECK: tfm.add {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}"tp"], []]>]}
// CHECK-LABEL: func @priority
// CHECK: tfm.add {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], ["tp"]]>]}
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @tie(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>},
                 %y: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) -> tensor<4x8xf32> {
    // expected-warning @+1 {{the user sharding of argument #1 (#tfm.sharding<[[], ["tp"]]>, 128 bytes) conflicts with argument #0 (#tfm.sharding<[["tp"], []]>, 128 bytes) here; the latter is backed by at least as many tensor bytes and wins, the former is resharded}}
    %z = tfm.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
    return %z : tensor<4x8xf32>
  }
  func.func @priority(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], []], priority = 1>},
                      %y: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>}) -> tensor<4x8xf32> {
    // expected-warning @+1 {{the user sharding of argument #0}}
    %z = tfm.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
    return %z : tensor<4x8xf32>
  }
}

// -----

// A sum of pending branches used nowhere else stays pending and is reduced
// once (parallel attention and MLP); a sum with an operand that is needed
// whole elsewhere anyway (a sequential residual stream) is not pending:
// each operand is reduced, as Megatron does.
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  // CHECK-LABEL: func @parallel_branches
  // CHECK: tfm.add {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], []], pending = ["tp"]>]}
  // CHECK-LABEL: func @sequential_residual
  // CHECK: tfm.add {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], []]>]}
  func.func @parallel_branches(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
                               %w1: tensor<8x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>},
                               %w2: tensor<8x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>}) -> tensor<4x8xf32> {
    %a = tfm.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %b = tfm.matmul %x, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %s = tfm.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
    %g = tfm.gelu %s tanh : tensor<4x8xf32>
    return %g : tensor<4x8xf32>
  }
  func.func @sequential_residual(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>},
                                 %w1: tensor<8x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>},
                                 %w2: tensor<8x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], []]>}) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %a = tfm.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %n = tfm.gelu %a tanh : tensor<4x8xf32>
    %b = tfm.matmul %x, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %s = tfm.add %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
    return %n, %s : tensor<4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// Two kv heads on a tp of 4: the kv-heads factor takes the major part of tp
// ("tp:(1)2": each kv head on two devices), the query group its minor
// part, so key and value follow the queries split over all of tp.
// CHECK-LABEL: func @kv_heads_below_tp
// CHECK-SAME: %arg1: tensor<1x2x4x2xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp:(1)2"], [], []]>}
// CHECK-SAME: %arg2: tensor<1x2x4x2xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp:(1)2"], [], []]>}
// CHECK: tfm.attention {{.*}} {tfm.shardings = [#tfm.sharding<{{\[\[}}], ["tp"], [], []]>]}
module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  func.func @kv_heads_below_tp(%q: tensor<1x8x4x2xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"], [], []]>},
                               %k: tensor<1x2x4x2xf32>, %v: tensor<1x2x4x2xf32>) -> tensor<1x8x4x2xf32> {
    %o = tfm.attention %q, %k, %v causal scale = 0.5 : tensor<1x8x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x8x4x2xf32>
    return %o : tensor<1x8x4x2xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  // expected-error @+1 {{argument #0 names mesh axes 'tp' and 'tp:(1)2', which share devices}}
  func.func @overlapping_axes(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[["tp"], ["tp:(1)2"]]>}) -> tensor<4x8xf32> {
    return %x : tensor<4x8xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  // expected-error @+1 {{argument #0 makes dimension 1 of 'tensor<6x8xf32>' of 3 parts, which do not divide it}}
  func.func @parts_not_dividing(%x: tensor<6x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]], parts = [1, 3]>}) -> tensor<6x8xf32> {
    return %x : tensor<6x8xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  // expected-error @+1 {{argument #0 splits each part of dimension 1 of 'tensor<6x8xf32>' over 4 devices, more than its size}}
  func.func @parts_too_small(%x: tensor<6x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]], parts = [1, 4]>}) -> tensor<6x8xf32> {
    return %x : tensor<6x8xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  // expected-error @+1 {{argument #0 names mesh axis 'tp:(1)3', which the mesh #tfm.mesh<tp = 4> does not have}}
  func.func @bad_sub_axis(%x: tensor<6x8xf32> {tfm.sharding = #tfm.sharding<[["tp:(1)3"], []]>}) -> tensor<6x8xf32> {
    return %x : tensor<6x8xf32>
  }
}

// -----

// expected-error @+1 {{sharding propagation needs the module attribute tfm.mesh}}
module {
  func.func @no_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<dp = 2>} {
  // expected-error @+1 {{argument #0 names mesh axis 'tp', which the mesh #tfm.mesh<dp = 2> does not have}}
  func.func @unknown_axis(%x: tensor<4xf32> {tfm.sharding = #tfm.sharding<[["tp"]]>}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 3>} {
  func.func @too_many_devices(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
    // expected-error @+1 {{the constraint splits dimension 1 of 'tensor<4x2xf32>' over 3 devices, more than its size}}
    %c = tfm.sharding_constraint %x to <[[], ["tp"]]> : tensor<4x2xf32>
    return %c : tensor<4x2xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  // expected-error @+1 {{argument #0 has pending axes in #tfm.sharding<[[]], pending = ["tp"]>; an input is a full value}}
  func.func @pending_input(%x: tensor<4xf32> {tfm.sharding = #tfm.sharding<[[]], pending = ["tp"]>}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// A declaration has nothing to propagate (it crashed the pass).
// CHECK-LABEL: func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
}
