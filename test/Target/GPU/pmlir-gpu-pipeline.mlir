// The GPU pipeline takes whole models and training steps to a host program
// in the LLVM dialect: GEMMs as cuBLASLt calls, everything else kernels in
// gpu.modules for sm_90, launched on the rank's stream. format=nvvm stops
// before ptxas, so this runs without a CUDA toolkit.
// RUN: pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-pipeline="format=nvvm" | FileCheck %s --implicit-check-not=memref. --implicit-check-not=linalg. --implicit-check-not=scf. --implicit-check-not='{{^ *(%[^ ]+ = )?"?}}tfm.'
// RUN: pmlir-opt %pmlir_src/models/tiny-llama.mlir --pmlir-gpu-pipeline="format=nvvm precision=tf32" | FileCheck %s --check-prefix=TF32
// RUN: pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-pipeline="format=nvvm precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-pipeline="format=nvvm" | FileCheck %s --check-prefix=FUSED
// RUN: pmlir-gen gpt2 --layers 2 --hidden 32 --heads 2 --vocab 50 --seq 8 --batch 2 --max-positions 16 --loss -o %t.loss.mlir
// RUN: pmlir-opt %t.loss.mlir --pmlir-autodiff="entry=forward name=forward_grad keep-entry=false" --pmlir-optimizer="entry=forward_grad name=train_step keep-entry=false max-grad-norm=1.0" -o %t.step.mlir
// RUN: pmlir-opt %t.step.mlir --pmlir-gpu-pipeline="entry=train_step format=nvvm" | FileCheck %s --check-prefix=STEP --implicit-check-not=memref. --implicit-check-not=scf.
// Options that make no GPU program are refused when the pipeline is built,
// before any pass runs (no warning per kernel from LLVM, no ptxas).
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-pipeline="format=nvvm block-size=2048" 2>&1 | FileCheck %s --check-prefix=BAD-BLOCK
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-pipeline="format=nvvm chip=sm_900" 2>&1 | FileCheck %s --check-prefix=BAD-CHIP --implicit-check-not="not a recognized processor"
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-pipeline="format=nvvm opt-level=4" 2>&1 | FileCheck %s --check-prefix=BAD-OPT
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-pipeline="format=cubin" 2>&1 | FileCheck %s --check-prefix=BAD-FORMAT
// RUN: not pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-pipeline="format=nvvm rank=2" 2>&1 | FileCheck %s --check-prefix=BAD-RANK
// RUN: pmlir-opt %pmlir_src/models/tiny-gpt2.mlir --pmlir-gpu-pipeline="format=nvvm chip=sm_100a" | FileCheck %s --check-prefix=SM100
// BAD-BLOCK: error: pmlir-gpu-pipeline: block-size must be 1 to 1024 (the threads of a CUDA block), not 2048
// BAD-CHIP: error: pmlir-gpu-pipeline: chip 'sm_900' is not a GPU LLVM's NVPTX target knows (sm_80, sm_90, sm_90a, sm_100, ...)
// BAD-OPT: error: pmlir-gpu-pipeline: opt-level must be 0 to 3, not 4
// BAD-FORMAT: for the --format option: Cannot find option named 'cubin'!
// BAD-RANK: error: pmlir-gpu-pipeline: rank names the job's rank whose work predict counts: it needs predict
// SM100: gpu.module @forward_kernel [#nvvm.target<O = 3, chip = "sm_100a", features = "+ptx80">]

// CHECK-LABEL: llvm.func @forward(
// CHECK: %[[S:.*]] = llvm.call @mgpuStreamCreate()
// CHECK: llvm.call @mgpuMemAlloc({{.*}}, %[[S]],
// CHECK: gpu.launch_func <%[[S]] : !llvm.ptr> @forward_kernel{{.*}}::@forward_kernel
// CHECK: llvm.call @pmlir_gpu_matmul_f32_r32_t01(
// CHECK: llvm.call @mgpuStreamSynchronize(
// CHECK: gpu.module @forward_kernel [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">]
// CHECK: llvm.func @forward_kernel({{.*}}) attributes {gpu.kernel
// CHECK: nvvm.read.ptx.sreg.tid.x
// A norm's or softmax's row is one block: its partials meet in warp
// shuffles.
// CHECK: nvvm.shfl.sync bfly

// TF32: llvm.call @pmlir_gpu_matmul_tf32_r32_t01(

// Between attention's two GEMMs one kernel: the scores' scale and causal
// mask, the row's max, the sum of exponentials and the quotient; between
// the output projection and the MLP's first GEMM one: the bias, the
// residual add and the layer norm.
// FUSED-LABEL: llvm.func @forward_layer(
// FUSED: llvm.call @pmlir_gpu_matmul_f32_r44_t01(
// FUSED: gpu.launch_func
// FUSED-NOT: gpu.launch_func
// FUSED: llvm.call @pmlir_gpu_matmul_f32_r44_t00(
// FUSED: llvm.call @pmlir_gpu_matmul_f32_r32_t00(
// FUSED: gpu.launch_func
// FUSED-NOT: gpu.launch_func
// FUSED: llvm.call @pmlir_gpu_matmul_f32_r32_t00(

// bf16: the layers' GEMMs read and write bf16 (the attention's too), the
// LM head's result is the f32 logits; kernels widen what they read and
// round what they write.
// BF16-LABEL: llvm.func @forward(
// BF16: llvm.call @pmlir_gpu_matmul_bf16f32_r32_t01(
// BF16-LABEL: llvm.func @forward_layer(
// BF16: llvm.call @pmlir_gpu_matmul_bf16_r32_t00(
// BF16: llvm.call @pmlir_gpu_matmul_bf16_r44_t01(
// BF16: llvm.call @pmlir_gpu_matmul_bf16_r44_t00(
// BF16: gpu.module @forward_layer_kernel
// BF16-DAG: llvm.fpext %{{.*}} : bf16 to f32
// BF16-DAG: llvm.fptrunc %{{.*}} : f32 to bf16

// The training step: AdamW's loop reads the step and the clipping norm in
// every thread; the loss's mean and embedding_grad's scatter are kernels.
// STEP-LABEL: llvm.func @train_step(
// STEP: gpu.launch_func
// STEP: llvm.call @mgpuStreamSynchronize(
