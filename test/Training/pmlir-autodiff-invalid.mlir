// RUN: pmlir-opt %s -split-input-file --pmlir-autodiff -verify-diagnostics
// An empty name made a function no parser reads back (@<<INVALID EMPTY
// SYMBOL>>), with exit 0.
// RUN: pmlir-gen gpt2 --layers 1 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 4 --loss \
// RUN:   | not pmlir-opt --pmlir-autodiff="name=" 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: error: 'func.func' op cannot be differentiated into a function without a name (name is empty)

// expected-error @+1 {{'func.func' op must return one scalar float loss to be differentiated (pmlir-gen --loss), returns 'tensor<2x8xf32>'}}
func.func @forward(%x: tensor<2x8xf32> {tfm.name = "x", tfm.role = "param"}) -> tensor<2x8xf32> {
  %0 = tfm.scale %x, 2.0 : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @forward(%x: tensor<2x8xf32> {tfm.name = "x", tfm.role = "param"},
                   %labels: tensor<2xi64> {tfm.name = "labels", tfm.role = "label"}) -> tensor<f32> {
  // The pieces of a partitioned cross entropy: pmlir-autodiff runs before
  // partitioning.
  %m = tfm.row_max %x : tensor<2x8xf32> -> tensor<2xf32>
  %p = tfm.cross_entropy_parts %x, %labels, %m vocab = 8 : tensor<2x8xf32>, tensor<2xi64>, tensor<2xf32> -> tensor<2x2xf32>
  // expected-error @+1 {{'tfm.cross_entropy_combine' op has no gradient (AutodiffOpInterface), so pmlir-autodiff cannot differentiate the loss through it}}
  %l = tfm.cross_entropy_combine %p, %labels ignore_index = -100 : tensor<2x2xf32>, tensor<2xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @forward(%x: tensor<2x7x16xf32> {tfm.name = "x", tfm.role = "input"},
                   %w: tensor<7x5xf32> {tfm.name = "w", tfm.role = "param"},
                   %labels: tensor<2x16xi64> {tfm.name = "labels", tfm.role = "label"}) -> tensor<f32> {
  // expected-error @+1 {{'tfm.matmul' op cannot be differentiated: a batched 'lhs' read transposed (transpose_lhs) against a shared rank-2 'rhs' has no gradient as one tfm op; transpose the operand before the matmul}}
  %y = tfm.matmul %x, %w transpose_lhs : tensor<2x7x16xf32>, tensor<7x5xf32> -> tensor<2x16x5xf32>
  %l = tfm.cross_entropy %y, %labels ignore_index = -100 : tensor<2x16x5xf32>, tensor<2x16xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{'func.func' op cannot be differentiated into @grad: the module already has a symbol of that name}}
func.func @forward(%x: tensor<8xf32> {tfm.name = "x", tfm.role = "param"}) -> tensor<f32> {
  %0 = tfm.sum_leading %x : tensor<8xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
func.func @grad() {
  return
}

// -----

// expected-error @+1 {{pmlir-autodiff: no function @forward to differentiate}}
module {
  func.func @model(%x: tensor<8xf32>) -> tensor<8xf32> {
    return %x : tensor<8xf32>
  }
}
