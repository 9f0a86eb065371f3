// RUN: pmlir-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// The mesh, shardings with and without pending axes, and the constraint op
// round-trip.
// CHECK: module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4>}
// CHECK: func.func @round_trip(%{{.*}}: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}"dp"], ["tp"]]>})
// CHECK: tfm.sharding_constraint %{{.*}} to <{{\[\[}}"dp"], []], pending = ["tp"]> : tensor<4x8xf32>
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4>} {
  func.func @round_trip(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[["dp"], ["tp"]]>}) -> tensor<4x8xf32> {
    %y = tfm.sharding_constraint %x to <[["dp"], []], pending = ["tp"]> : tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

// -----

// Open dimensions and priorities round-trip; the defaults print nothing.
// CHECK: func.func @open_and_priority(%{{.*}}: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]], open = [0], priority = 2>}, %{{.*}}: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], []]>})
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4>} {
  func.func @open_and_priority(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]], open = [0], priority = 2>},
                               %y: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], []], priority = 0>}) {
    return
  }
}

// -----

// expected-error @+1 {{open dimension 2 is not one of dimensions 0 to 1 (once each)}}
func.func @open_out_of_range(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], []], open = [2]>}) {
  return
}

// -----

// expected-error @+1 {{priority -1 is negative}}
func.func @negative_priority(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], []], priority = -1>}) {
  return
}

// -----

// expected-error @+1 {{expected 'pending', 'open', 'priority' or 'parts', got 'closed'}}
func.func @unknown_key(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[], []], closed = [0]>}) {
  return
}

// -----

// A rank order round-trips; the default one (tp fastest) prints nothing.
// CHECK: module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4, rank_order = [dp, tp]>}
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4, rank_order = [dp, tp]>} {}

// -----

// CHECK: module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4>}
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4, rank_order = [tp, dp]>} {}

// -----

// expected-error @+1 {{mesh rank_order names 'pp', which is not an axis of the mesh}}
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4, rank_order = [pp, dp]>} {}

// -----

// expected-error @+1 {{mesh rank_order names 'dp' twice}}
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4, rank_order = [dp, dp]>} {}

// -----

// expected-error @+1 {{mesh rank_order must name every axis of the mesh}}
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4, rank_order = [dp]>} {}

// -----

// expected-error @+1 {{mesh axes come before rank_order}}
module attributes {tfm.mesh = #tfm.mesh<dp = 2, rank_order = [tp, dp], tp = 4>} {}

// -----

// expected-error @+1 {{mesh axis 'dp' is listed twice}}
module attributes {tfm.mesh = #tfm.mesh<dp = 2, dp = 4>} {}

// -----

// Axis names are text: the bytes of a string literal must be UTF-8.
// expected-error @+1 {{mesh axis 1's name is not UTF-8 text}}
module attributes {tfm.mesh = #tfm.mesh<dp = 2, "t\FFp" = 2>} {}

// -----

// expected-error @+1 {{mesh axis 'dp' has size 0; sizes must be at least 1}}
module attributes {tfm.mesh = #tfm.mesh<dp = 0>} {}

// -----

// 2^65 devices: the product of the sizes overflows 64 bits.
// expected-error @+1 {{a mesh of more than 1048576 devices (2^20) is not supported}}
module attributes {tfm.mesh = #tfm.mesh<a = 4294967296, b = 4294967296, c = 2>} {}

// -----

// expected-error @+1 {{a mesh of more than 1048576 devices (2^20) is not supported}}
module attributes {tfm.mesh = #tfm.mesh<dp = 1024, tp = 2048>} {}

// -----

// expected-error @+1 {{mesh axis 'dp' is used twice in one sharding}}
func.func @axis_twice(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[["dp"], ["dp"]]>}) {
  return
}

// -----

// expected-error @+1 {{dimension 0 must list mesh axis names (strings), got 1 : i64}}
func.func @not_a_name(%x: tensor<4x8xf32> {tfm.sharding = #tfm.sharding<[[1], []]>}) {
  return
}

// -----

func.func @rank_mismatch(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tfm.sharding_constraint' op sharding has 1 dimensions for a tensor of rank 2}}
  %y = tfm.sharding_constraint %x to <[["dp"]]> : tensor<4x8xf32>
  return
}

// -----

// A dimension of parts round-trips; parts of 1 everywhere print nothing.
// CHECK: func.func @parts(%{{.*}}: tensor<4x12xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]], parts = [1, 3]>}, %{{.*}}: tensor<4x12xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]]>})
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4>} {
  func.func @parts(%x: tensor<4x12xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]], parts = [1, 3]>},
                   %y: tensor<4x12xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]], parts = [1, 1]>}) {
    return
  }
}

// -----

// expected-error @+1 {{has 1 part counts for 2 dimensions}}
func.func @parts_rank(%x: tensor<4x12xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]], parts = [3]>}) {
  return
}

// -----

// expected-error @+1 {{dimension 1 has 0 parts; a count is at least 1}}
func.func @parts_zero(%x: tensor<4x12xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]], parts = [1, 0]>}) {
  return
}
