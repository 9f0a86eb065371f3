// RUN: pmlir-opt %s --split-input-file --pmlir-gpu-split-reductions | FileCheck %s

// A reduction into two values that do not depend on each other (a loss's
// sum over the tokens that count, and the count of them) is two
// reductions, each with the ops its value needs: pmlir-gpu-kernel-loops
// then runs each on blocks of threads instead of both in one thread.
// CHECK-LABEL: func.func @two_independent_sums
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<f32>)
// CHECK: arith.cmpi ne
// CHECK-NEXT: arith.select
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
// CHECK: %[[COUNT:.*]] = linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<f32>)
// CHECK: arith.cmpi ne
// CHECK-NEXT: arith.select
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
// CHECK: return %[[SUM]], %[[COUNT]]
#tok = affine_map<(d0) -> (d0)>
#one = affine_map<(d0) -> ()>
func.func @two_independent_sums(%loss: tensor<512xf32>, %labels: tensor<512xi64>) -> (tensor<f32>, tensor<f32>) {
  %zero = arith.constant dense<0.0> : tensor<f32>
  %sum, %count = linalg.generic {indexing_maps = [#tok, #tok, #one, #one], iterator_types = ["reduction"]}
      ins(%loss, %labels : tensor<512xf32>, tensor<512xi64>) outs(%zero, %zero : tensor<f32>, tensor<f32>) {
  ^bb0(%l: f32, %label: i64, %s: f32, %c: f32):
    %ignored = arith.constant -100 : i64
    %z = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %counts = arith.cmpi ne, %label, %ignored : i64
    %kept = arith.select %counts, %l, %z : f32
    %s2 = arith.addf %s, %kept : f32
    %n = arith.select %counts, %one, %z : f32
    %c2 = arith.addf %c, %n : f32
    linalg.yield %s2, %c2 : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  return %sum, %count : tensor<f32>, tensor<f32>
}

// -----

// Where one value reads the other's accumulator (a running sum of the
// partial sums), the reduction stays one.
// CHECK-LABEL: func.func @dependent_sums_stay_one
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>)
// CHECK-NOT: linalg.generic
#tok = affine_map<(d0) -> (d0)>
#one = affine_map<(d0) -> ()>
func.func @dependent_sums_stay_one(%x: tensor<512xf32>) -> (tensor<f32>, tensor<f32>) {
  %zero = arith.constant dense<0.0> : tensor<f32>
  %sum, %running = linalg.generic {indexing_maps = [#tok, #one, #one], iterator_types = ["reduction"]}
      ins(%x : tensor<512xf32>) outs(%zero, %zero : tensor<f32>, tensor<f32>) {
  ^bb0(%v: f32, %s: f32, %r: f32):
    %s2 = arith.addf %s, %v : f32
    %r2 = arith.addf %r, %s2 : f32
    linalg.yield %s2, %r2 : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  return %sum, %running : tensor<f32>, tensor<f32>
}
