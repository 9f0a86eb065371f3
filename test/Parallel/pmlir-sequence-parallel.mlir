// RUN: pmlir-opt %s --pmlir-sequence-parallel --split-input-file --verify-diagnostics | FileCheck %s

// A row-parallel output into a residual add and a norm: the all-reduce
// becomes a reduce-scatter along the sequence, the add and the norm run on
// the shard (the full residual is sliced locally), and the sequence is
// gathered right before the next matmul.
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  shard.grid @mesh(shape = 2x2)
  // CHECK-LABEL: func.func @residual_and_norm
  // CHECK-SAME: %[[A:[^:]*]]: tensor<2x8x16xf32>, %[[W:[^:]*]]: tensor<16x32xf32>, %[[X:[^:]*]]: tensor<2x8x32xf32>
  // CHECK: %[[Y:.*]] = tfm.matmul %[[A]], %[[W]]
  // CHECK-NEXT: %[[R:.*]] = shard.reduce_scatter %[[Y]] on @mesh grid_axes = [1] scatter_axis = 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
  // CHECK-NEXT: %[[XS:.*]] = shard.all_slice %[[X]] on @mesh grid_axes = [1] slice_axis = 1 : tensor<2x8x32xf32> -> tensor<2x4x32xf32>
  // CHECK-NEXT: %[[H:.*]] = tfm.add %[[R]], %[[XS]] : tensor<2x4x32xf32>, tensor<2x4x32xf32>
  // CHECK-NEXT: %[[N:.*]] = tfm.layernorm %[[H]], {{.*}} : tensor<2x4x32xf32>, tensor<32xf32>
  // CHECK-NEXT: %[[F:.*]] = shard.all_gather %[[N]] on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x4x32xf32> -> tensor<2x8x32xf32>
  // CHECK-NEXT: tfm.matmul %[[F]], %{{.*}} : tensor<2x8x32xf32>, tensor<32x16xf32> -> tensor<2x8x16xf32>
  // CHECK-NEXT: %[[HF:.*]] = shard.all_gather %[[H]] on @mesh grid_axes = [1] gather_axis = 1
  // CHECK-NEXT: return {{.*}}, %[[HF]]
  func.func @residual_and_norm(%a: tensor<2x8x16xf32>, %w: tensor<16x32xf32>, %x: tensor<2x8x32xf32>,
                               %g: tensor<32xf32>, %b: tensor<32xf32>, %w1: tensor<32x16xf32>)
      -> (tensor<2x8x16xf32>, tensor<2x8x32xf32>) {
    %y = tfm.matmul %a, %w : tensor<2x8x16xf32>, tensor<16x32xf32> -> tensor<2x8x32xf32>
    %r = shard.all_reduce %y on @mesh grid_axes = [1] : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    %h = tfm.add %r, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>
    %n = tfm.layernorm %h, %g, %b eps = 1.0e-05 : tensor<2x8x32xf32>, tensor<32xf32>
    %z = tfm.matmul %n, %w1 : tensor<2x8x32xf32>, tensor<32x16xf32> -> tensor<2x8x16xf32>
    return %z, %h : tensor<2x8x16xf32>, tensor<2x8x32xf32>
  }

  // All-reduces over another axis, or feeding no sequence-local op (the
  // vocab-parallel cross entropy's), stay.
  // CHECK-LABEL: func.func @untouched
  // CHECK: shard.all_reduce {{.*}} grid_axes = [0]
  // CHECK: shard.all_reduce {{.*}} grid_axes = [1]
  // CHECK-NOT: reduce_scatter
  func.func @untouched(%x: tensor<2x8x32xf32>, %w: tensor<32x16xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x16xf32>) {
    %r = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    %g = tfm.gelu %r tanh : tensor<2x8x32xf32>
    %s = shard.all_reduce %x on @mesh grid_axes = [1] : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    %m = tfm.matmul %s, %w : tensor<2x8x32xf32>, tensor<32x16xf32> -> tensor<2x8x16xf32>
    return %g, %m : tensor<2x8x32xf32>, tensor<2x8x16xf32>
  }
}

// -----

// Two shards gathered before one op come in the order their uses were found
// (the second all-reduce's region is grown first), whatever the addresses
// of the values: every rank compiles its own program, and ranks that
// ordered the two gathers differently would swap their data.
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  shard.grid @mesh(shape = 2x2)
  // CHECK-LABEL: func.func @gathers_in_a_fixed_order
  // CHECK: %[[H1:.*]] = tfm.add %reduce_scatter,
  // CHECK: %[[H2:.*]] = tfm.add %reduce_scatter_0,
  // CHECK-NEXT: %[[G2:.*]] = shard.all_gather %[[H2]]
  // CHECK-NEXT: %[[G1:.*]] = shard.all_gather %[[H1]]
  // CHECK-NEXT: tfm.layernorm_weight_grad %[[G1]], %[[G2]]
  func.func @gathers_in_a_fixed_order(%y1: tensor<2x8x32xf32>, %y2: tensor<2x8x32xf32>,
                                      %x: tensor<2x8x32xf32>) -> tensor<32xf32> {
    %r1 = shard.all_reduce %y1 on @mesh grid_axes = [1] : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    %r2 = shard.all_reduce %y2 on @mesh grid_axes = [1] : tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    %h1 = tfm.add %r1, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>
    %h2 = tfm.add %r2, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>
    %g = tfm.layernorm_weight_grad %h1, %h2 eps = 1.0e-05 : tensor<2x8x32xf32> -> tensor<32xf32>
    return %g : tensor<32xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  shard.grid @mesh(shape = 4)
  func.func @indivisible_sequence(%y: tensor<2x6x32xf32>) -> tensor<2x6x32xf32> {
    // expected-error @+1 {{'shard.all_reduce' op reduces a tensor of type 'tensor<2x6x32xf32>' whose sequence (dimension 1, size 6) tp = 4 does not divide: sequence parallelism splits the sequence over tp}}
    %r = shard.all_reduce %y on @mesh grid_axes = [0] : tensor<2x6x32xf32> -> tensor<2x6x32xf32>
    %s = tfm.scale %r, 2.0 : tensor<2x6x32xf32>
    return %s : tensor<2x6x32xf32>
  }
}

// -----

// expected-error @+1 {{sequence parallelism needs the mesh axis 'tp', which the mesh #tfm.mesh<dp = 2> does not have}}
module attributes {tfm.mesh = #tfm.mesh<dp = 2>} {
  shard.grid @mesh(shape = 2)
}

// -----

// expected-error @+1 {{sequence parallelism runs on a partitioned program (shard.grid @mesh); run pmlir-partition first}}
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
}

// -----

// expected-error @+1 {{sequence parallelism needs the module attribute tfm.mesh}}
module {
}

// GPT-2 under the Megatron recipe (dp = 2 x tp = 2): the embedding's and
// both all-reduces of the layer become reduce-scatters; the residual
// stream, the norms and the bias adds run on sequence shards; one
// all-gather before the QKV projections (the three share it), one before
// fc1, one before the LM head.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron sequence-parallel=1 comm-report=%t.gpt2.json" \
// RUN:   | FileCheck %s --check-prefix=GPT2
// RUN: FileCheck %s --check-prefix=GPT2-COMM < %t.gpt2.json
// GPT2: tfm.embedding {{.*}} rows_from
// GPT2: %[[E:.*]] = shard.reduce_scatter {{.*}} grid_axes = [1] scatter_axis = 1 : tensor<1x16x64xf32> -> tensor<1x8x64xf32>
// GPT2: %[[P:.*]] = shard.all_slice {{.*}} slice_axis = 0 : tensor<16x64xf32> -> tensor<8x64xf32>
// GPT2: %[[H0:.*]] = tfm.add %[[E]], %[[P]] : tensor<1x8x64xf32>, tensor<8x64xf32>
// GPT2: tfm.layer 0 : tensor<1x8x64xf32>
// GPT2: %[[N1:.*]] = tfm.layernorm %[[H0]], {{.*}} : tensor<1x8x64xf32>
// GPT2: %[[G1:.*]] = shard.all_gather %[[N1]] on @mesh grid_axes = [1] gather_axis = 1 : tensor<1x8x64xf32> -> tensor<1x16x64xf32>
// GPT2-NOT: shard.all_gather
// GPT2: tfm.attention
// GPT2: %[[O:.*]] = tfm.matmul {{.*}} -> tensor<1x16x64xf32>
// GPT2-NEXT: %[[RO:.*]] = shard.reduce_scatter %[[O]] {{.*}} scatter_axis = 1 : tensor<1x16x64xf32> -> tensor<1x8x64xf32>
// GPT2-NEXT: %[[OB:.*]] = tfm.add %[[RO]], {{.*}} : tensor<1x8x64xf32>, tensor<64xf32>
// GPT2-NEXT: %[[H1:.*]] = tfm.add %[[H0]], %[[OB]] : tensor<1x8x64xf32>, tensor<1x8x64xf32>
// GPT2-NEXT: %[[N2:.*]] = tfm.layernorm %[[H1]], {{.*}} : tensor<1x8x64xf32>
// GPT2-NEXT: %[[G2:.*]] = shard.all_gather %[[N2]] {{.*}} gather_axis = 1 : tensor<1x8x64xf32> -> tensor<1x16x64xf32>
// GPT2-NEXT: tfm.matmul %[[G2]]
// GPT2: shard.reduce_scatter {{.*}} scatter_axis = 1 : tensor<1x16x64xf32> -> tensor<1x8x64xf32>
// GPT2: tfm.yield {{.*}} : tensor<1x8x64xf32>
// GPT2: tfm.layernorm {{.*}} : tensor<1x8x64xf32>
// GPT2-NEXT: %[[GF:.*]] = shard.all_gather {{.*}} gather_axis = 1 : tensor<1x8x64xf32> -> tensor<1x16x64xf32>
// GPT2-NEXT: tfm.matmul %[[GF]], {{.*}} transpose_rhs
// GPT2-NOT: shard.all_reduce
// The bytes on the wire are the all-reduce plan's: 3 all-reduces of 4096
// bytes in pairs send 3 x 4096; 3 reduce-scatters and 3 all-gathers half
// as much each.
// GPT2-COMM: "total": {
// GPT2-COMM-NEXT: "bytes_per_rank": 24576,
// GPT2-COMM-NEXT: "count": 6,
// GPT2-COMM-NEXT: "seconds": {{.*}},
// GPT2-COMM-NEXT: "wire_bytes_per_rank": 12288
// GPT2-COMM: "all_gather": {
// GPT2-COMM-NEXT: "bytes_per_rank": 12288,
// GPT2-COMM-NEXT: "count": 3,
// GPT2-COMM-NEXT: "seconds": {{.*}},
// GPT2-COMM-NEXT: "wire_bytes_per_rank": 6144
// GPT2-COMM: "reduce_scatter": {
// GPT2-COMM-NEXT: "bytes_per_rank": 12288,
// GPT2-COMM-NEXT: "count": 3,
// GPT2-COMM-NEXT: "seconds": {{.*}},
// GPT2-COMM-NEXT: "wire_bytes_per_rank": 6144
// GPT2-COMM-NOT: all_reduce
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron comm-report=-" -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=NO-SP
// NO-SP: "total": {
// NO-SP-NEXT: "bytes_per_rank": 12288,
// NO-SP-NEXT: "count": 3,
// NO-SP-NEXT: "seconds": {{.*}},
// NO-SP-NEXT: "wire_bytes_per_rank": 12288

// Llama (tp = 4): as in Megatron, the embedding and each block's output
// are reduce-scattered, the residual stream is a sequence shard, each norm
// runs on it and is gathered for the projections after it.
// RUN: pmlir-gen llama --layers 1 --hidden 64 --heads 8 --kv-heads 4 --ffn 176 --vocab 100 --seq 16 --batch 2 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=4" \
// RUN:   | pmlir-opt --pmlir-sharding-pipeline="recipe=megatron sequence-parallel=1" | FileCheck %s --check-prefix=LLAMA
// LLAMA: %[[E:.*]] = shard.reduce_scatter {{.*}} scatter_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
// LLAMA-NEXT: %[[N1:.*]] = tfm.rmsnorm %[[E]], {{.*}} : tensor<2x4x64xf32>, tensor<64xf32>
// LLAMA-NEXT: shard.all_gather %[[N1]] {{.*}} gather_axis = 1 : tensor<2x4x64xf32> -> tensor<2x16x64xf32>
// LLAMA: %[[O:.*]] = shard.reduce_scatter {{.*}} scatter_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
// LLAMA-NEXT: %[[H:.*]] = tfm.add %[[E]], %[[O]] : tensor<2x4x64xf32>, tensor<2x4x64xf32>
// LLAMA-NEXT: %[[N2:.*]] = tfm.rmsnorm %[[H]]
// LLAMA-NEXT: shard.all_gather %[[N2]]
// LLAMA: %[[D:.*]] = shard.reduce_scatter {{.*}} scatter_axis = 1 : tensor<2x16x64xf32> -> tensor<2x4x64xf32>
// LLAMA-NEXT: %[[H2:.*]] = tfm.add %[[H]], %[[D]]
// LLAMA-NEXT: tfm.yield %[[H2]] : tensor<2x4x64xf32>
// LLAMA: tfm.rmsnorm {{.*}} : tensor<2x4x64xf32>, tensor<64xf32>
// LLAMA-NEXT: %[[GF:.*]] = shard.all_gather {{.*}} gather_axis = 1 : tensor<2x4x64xf32> -> tensor<2x16x64xf32>
// LLAMA-NEXT: tfm.matmul %[[GF]], {{.*}} transpose_rhs
// LLAMA-NOT: shard.all_reduce

// A refusal at module level names the cause without printing the module.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 64 --heads 4 --vocab 96 --seq 16 --batch 2 --max-positions 32 \
// RUN:   | pmlir-opt --pmlir-attach-mesh="mesh=tp=2" \
// RUN:   | not pmlir-opt --pmlir-sequence-parallel 2>&1 | FileCheck %s --check-prefix=UNPARTITIONED --implicit-check-not=builtin.module
// UNPARTITIONED: error: sequence parallelism runs on a partitioned program
