// RUN: pmlir-opt %s -split-input-file --pmlir-zero=stage=1 -verify-diagnostics

// expected-error @+1 {{ZeRO shards the model state over the data-parallel axis 'dp', which mesh #tfm.mesh<tp = 2> does not have}}
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @train_step(%p: tensor<8xf32> {tfm.role = "param"}) -> tensor<8xf32> {
    return %p : tensor<8xf32>
  }
}

// -----

// expected-error @+1 {{ZeRO shards a training step's optimizer state, and no function has one (run pmlir-optimizer first)}}
module attributes {tfm.mesh = #tfm.mesh<dp = 2>} {
  func.func @forward(%p: tensor<8xf32> {tfm.role = "param"}) -> tensor<8xf32> {
    return %p : tensor<8xf32>
  }
}

// -----

module attributes {tfm.mesh = #tfm.mesh<dp = 2>} {
  // expected-error @+1 {{'func.func' op argument #0 is already split over 'dp': ZeRO shards replicated parameters over it}}
  func.func @train_step(%p: tensor<8xf32> {tfm.role = "param", tfm.sharding = #tfm.sharding<[["dp"]]>},
                        %m: tensor<8xf32> {tfm.role = "optimizer_state", tfm.sharded_like = 0 : i64}) -> tensor<8xf32> {
    return %p : tensor<8xf32>
  }
}
