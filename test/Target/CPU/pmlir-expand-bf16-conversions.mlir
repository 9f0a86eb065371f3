// RUN: pmlir-opt %s --pmlir-expand-bf16-conversions | FileCheck %s

// bf16 conversions become integer ops; no arith.extf or truncf on bf16
// is left.
// CHECK-LABEL: func @conversions
// CHECK-NOT: arith.extf
// CHECK: arith.bitcast %{{.*}} : bf16 to i16
// CHECK: arith.extui
// CHECK: arith.shli
// CHECK-NOT: arith.truncf
// CHECK: arith.shrui
// CHECK: arith.trunci
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
func.func @conversions(%h: bf16, %x: f32) -> (f32, bf16) {
  %w = arith.extf %h : bf16 to f32
  %n = arith.truncf %x : f32 to bf16
  return %w, %n : f32, bf16
}

// The maximum and minimum stay whole (a max reduction LLVM vectorizes),
// and so do conversions between other types.
// CHECK-LABEL: func @others
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.minimumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.extf %{{.*}} : f16 to f32
func.func @others(%a: f32, %b: f32, %c: f16) -> (f32, f32, f32) {
  %m = arith.maximumf %a, %b : f32
  %n = arith.minimumf %a, %b : f32
  %w = arith.extf %c : f16 to f32
  return %m, %n, %w : f32, f32, f32
}
