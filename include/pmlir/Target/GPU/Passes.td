//===- Passes.td - the GPU target ----------------------------*- tablegen -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TARGET_GPU_PASSES_TD
#define PMLIR_TARGET_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def SelectGpuKernels : Pass<"pmlir-select-gpu-kernels"> {
  let summary = "marks the matmul contractions that run as cuBLASLt GEMMs";
  let description = [{
    The GPU's choice among the contractions `pmlir-convert-tfm-to-linalg`
    builds (pmlir/Conversion/Contraction.h: loops batch..., m, n, k, the lhs
    indexed (batch..., m, k) or transposed, the rhs (k, n) or (n, k) with or
    without the batch, a multiply-add body): every GEMM is named for the
    runtime's cuBLASLt kernel as its `library_call`,
    `pmlir_gpu_matmul_<types>_r<L><R>_t<A><B>`, L and R the operand ranks,
    A and B whether each is transposed. An f32 GEMM's types are the compute
    mode `precision` asks: `f32` (IEEE fp32 products and sums) or `tf32`
    (tensor cores, fp32 sums); the GEMMs of `pmlir-store-bf16` (precision
    `bf16`) are `bf16` (bf16 operands and result) or `bf16f32` (an f32
    result), tensor cores summing in fp32. After bufferization
    `pmlir-linalg-to-library-calls` turns them into calls.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [(d0, d1, d2, d3) -> (d0, d1, d3),
                                     (d0, d1, d2, d3) -> (d3, d2),
                                     (d0, d1, d2, d3) -> (d0, d1, d2)], ...}
        ins(%a, %w : tensor<2x3x16xf32>, tensor<16x8xf32>) ...
    ```
    After (`precision=tf32`): the same op with
    `library_call = "pmlir_gpu_matmul_tf32_r32_t00"`.
  }];
  let options = [
    Option<"precision", "precision", "pmlir::Precision", "pmlir::Precision::F32",
           "the program's precision: f32, tf32 (f32 GEMMs on tensor cores) or bf16", "pmlir::precisionValues()">,
  ];
}

def GpuSplitReductions : Pass<"pmlir-gpu-split-reductions"> {
  let summary = "splits a reduction into several independent values into one reduction a value";
  let description = [{
    `pmlir-gpu-reduction-kernels` runs a reduction into one value on blocks of
    threads, one into several values in one thread, in order. A
    `linalg.generic` on tensors with several results and reduction loops
    whose yielded values do not read one another's accumulators (a loss's
    sum over the tokens that count, and the count of them) becomes one
    generic a result, each with the body's ops its value needs. Each input
    is then read once a result; nothing else changes. A reduction whose
    values depend on one another stays one.

    Before:
    ```mlir
    %s, %n = linalg.generic {iterator_types = ["reduction"], ...}
        ins(%loss, %labels : ...) outs(%zero, %zero : tensor<f32>, tensor<f32>) {
      ... linalg.yield %sum, %count : f32, f32
    }
    ```
    After:
    ```mlir
    %s = linalg.generic {iterator_types = ["reduction"], ...}
        ins(%loss, %labels : ...) outs(%zero : tensor<f32>) { ... linalg.yield %sum : f32 }
    %n = linalg.generic {iterator_types = ["reduction"], ...}
        ins(%loss, %labels : ...) outs(%zero : tensor<f32>) { ... linalg.yield %count : f32 }
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

// The kernel-loop passes: on a GPU the host only launches. Every buffer
// lives in device memory, so after bufferization (the GEMMs already library
// calls) nothing of a host function (a `func.func` outside `gpu.module`) may
// load, store or loop over one. These passes, in this order
// (buildGpuKernelLoopsPipeline, registered as the pipeline
// `pmlir-gpu-kernel-loops`), leave each host function with `scf.parallel`
// loops mapped to blocks and threads, which `convert-parallel-loops-to-gpu`
// makes kernels, and nothing else that touches memory. Work that cannot be
// moved (a loaded value that leaves the function, an op with memory effects
// they do not know) is an error that names the op: it has no GPU lowering.

def GpuReductionKernels : Pass<"pmlir-gpu-reduction-kernels", "mlir::ModuleOp"> {
  let summary = "makes row reductions one block a row, other large reductions one block a value";
  let description = [{
    The first of the kernel-loop passes; the reductions' loops are mapped
    here, and later passes leave them as they are.
    - A reduction along the innermost dimension alone (a row's sum or max:
      norms, softmax, a logsumexp) becomes one block a row: the block's
      threads stride over the row with partials of their own, combined by
      a `gpu.all_reduce` (warp shuffles) that every thread gets back, so
      that a row is read coalesced. Consecutive row reductions of the same
      rows, each reading the values earlier ones reduced, and elementwise
      work over those rows after them (a layer norm's sum, squared
      deviations and normalization; a softmax's max, sum of exponentials
      and quotient, with its causal mask from the loop indices; their
      gradients) are one such kernel: the reduced values pass from step to
      step in registers (and are stored as well), the zero fill of each
      reduction's buffer is folded into it, and only allocations, frees and
      pure ops may sit between the steps.
    - Another reduction of at least a block's worth of elements into each
      value (a bias's or a norm weight's gradient summed over the tokens
      for each column; a whole tensor to one value: a loss's sum, the
      gradients' sum of squares for clipping) becomes one block a value,
      whose threads stride over the reduced elements, their partials
      combined by `gpu.all_reduce`. Where that makes fewer blocks than
      `reduction-blocks` and each value has many elements (at least 16
      times a block's threads a slice), each value's elements are cut into
      slices, one block a slice (two kernels: the first writes each slice's
      partial to a buffer of its own, the second combines a value's
      partials, in order, in one block): a whole tensor's sum runs on the
      whole GPU instead of one multiprocessor, and its result does not
      depend on the order blocks finish in.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256",
           "threads a block along a loop's innermost dimension">,
    Option<"reductionBlocks", "reduction-blocks", "int64_t", "1024",
           "blocks a reduction into few values is spread over, by slices of "
           "each value's elements (0: one block a value)">,
  ];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuParallelLoops : Pass<"pmlir-gpu-parallel-loops", "mlir::ModuleOp"> {
  let summary = "makes each linalg op on buffers and each copy a parallel loop";
  let description = [{
    The second of the kernel-loop passes. Each linalg op on buffers becomes
    one `scf.parallel` over its parallel dimensions, put outermost, with
    its reduction dimensions as `scf.for` loops inside (each thread's own
    sum: a norm's weight gradient sums over the batch inside its column's
    thread); a `memref.copy` outside the parallel loops becomes a parallel
    loop of loads and stores (a 0-d copy one load and store, wrapped by
    `pmlir-gpu-wrap-sequential-work`). A linalg op that is no loop nest is
    an error.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuScatterByColumns : Pass<"pmlir-gpu-scatter-by-columns", "mlir::ModuleOp"> {
  let summary = "runs a scatter into rows one thread a column, walking the tokens in order";
  let description = [{
    The third of the kernel-loop passes. A scatter into rows (embedding_grad:
    a sequential loop over tokens whose only writes are one parallel loop
    over a row's columns, every access to the rows it writes in each
    thread's own column) runs one thread a column, each walking the tokens
    in order: the same sums in the same order. Where every access is in
    one row a token (a subview one row high, as embedding_grad's), the rows
    are split into `scatter-row-groups` groups by row index modulo the
    groups, a thread a column and group, which skips the other groups'
    tokens: each element is still summed by one thread in token order, and
    the scatter fills that many more blocks. Other loops are left as they
    are.
  }];
  let options = [
    Option<"scatterRowGroups", "scatter-row-groups", "int64_t", "32",
           "groups a scatter into rows splits its rows into, by row index "
           "modulo the groups, each its own blocks (1: every row in one; "
           "each group's threads read every token's row index)">,
  ];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuSinkScalarReads : Pass<"pmlir-gpu-sink-scalar-reads", "mlir::ModuleOp"> {
  let summary = "moves scalar reads on the host into the parallel loops that use them";
  let description = [{
    The fourth of the kernel-loop passes. A scalar read (`memref.load`
    outside any parallel loop, and the pure arithmetic on it: AdamW's step
    and gradient norm) is sunk into each parallel loop that uses it, where
    every thread reads it, when nothing between the read and the loop may
    write what it reads; otherwise it stays, and
    `pmlir-gpu-wrap-sequential-work` takes it.

    Before:
    ```mlir
    %s = memref.load %step[] : memref<f32>
    %c = arith.extf %s : f32 to f64
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      ... %c ...
    }
    ```
    After:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %s = memref.load %step[] : memref<f32>
      %c = arith.extf %s : f32 to f64
      ... %c ...
    }
    ```
  }];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuWrapSequentialWork : Pass<"pmlir-gpu-wrap-sequential-work", "mlir::ModuleOp"> {
  let summary = "makes the host's remaining memory work one-thread parallel loops";
  let description = [{
    The fifth of the kernel-loop passes. What still reads or writes memory
    outside the parallel loops (a sequential loop over a scalar, a 0-d
    update, a loop over tokens whose writes cross columns) is wrapped, a run
    of such ops with the pure ops between them at a time, in a
    one-iteration `scf.parallel`: a one-thread kernel. A pure op of the run
    whose result the host uses after it is computed before the loop as
    well. A load whose value the host uses (a loop's bound, a view's size:
    the rows of each expert's GEMM) reads a copy on the host's stack
    instead (`memref.alloca`), which a `gpu.memcpy` fills from the device
    before the outermost enclosing `scf.for` that does not write the buffer
    (`pmlir-gpu-host-buffers` makes the host wait for it) and read by the
    later loops of the block while nothing between may write the buffer (a
    layer's grouped GEMMs over the same counts); only a buffer of
    static shape and identity layout up to 64 KiB is copied so, and any
    other memory op's result the host uses is an error (it has no GPU
    lowering). Calls (the runtime's GEMMs and collectives), allocations,
    frees and the copies stay on the host.

    Before (in the host's loop over experts, around each one's GEMM call):
    ```mlir
    scf.for %e = %c0 to %c3 step %c1 iter_args(%start = %c0) -> (index) {
      %n = memref.load %counts[%e] : memref<3xi64>
      ...
    }
    ```
    After:
    ```mlir
    %host = memref.alloca() : memref<3xi64>
    ...
    gpu.memcpy %host, %counts : memref<3xi64>, memref<3xi64>
    scf.for %e = %c0 to %c3 step %c1 iter_args(%start = %c0) -> (index) {
      %n = memref.load %host[%e] : memref<3xi64>
      ...
    }
    ```
  }];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuTileAndMap : Pass<"pmlir-gpu-tile-and-map", "mlir::ModuleOp"> {
  let summary = "tiles each unmapped top-level parallel loop and maps it to blocks and threads";
  let description = [{
    The last of the kernel-loop passes. Each top-level parallel loop not
    mapped yet is tiled and mapped: its outer dimensions collapsed into
    one, the rows, on `block_x` (which takes 2^31 - 1 blocks), its
    innermost dimension in tiles of `block-size` threads (`thread_x`; fewer
    where the dimension is shorter) on `block_y`. A parallel loop nested in
    it (a row's update inside a sequential loop over tokens) is made
    sequential: it runs in its thread.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", "256",
           "threads a block along a loop's innermost dimension">,
  ];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuHostBuffers : Pass<"pmlir-gpu-host-buffers", "mlir::ModuleOp"> {
  let summary = "allocates host functions' buffers on the device, ordered on the rank's stream";
  let description = [{
    After the loops are kernels (`gpu.launch_func`), each host function
    allocates, frees and copies device memory, every GPU op ordered on one
    stream: `%t0 = gpu.wait async` at the function's start (the runtime's
    `mgpuStreamCreate` gives every call the rank's one stream, the stream
    its cuBLASLt GEMMs and NCCL collectives run on too), then
    - `memref.alloc` -> `gpu.alloc async`, `memref.dealloc` ->
      `gpu.dealloc async` (the runtime's device pool, stream-ordered);
    - `memref.get_global` of a constant -> a device buffer filled from it by
      `gpu.memcpy async`;
    - every `gpu.launch_func` async, after the previous GPU op;
    - a `gpu.memcpy` to a copy the host reads (staged by
      `pmlir-gpu-wrap-sequential-work`) async, then `gpu.wait` for it.
    Only the entry function waits for its stream (`gpu.wait`, which
    returns when the work is done), besides those copies: other host
    functions are called from it on the same stream, and their work stays
    queued there. A host op left that reads or writes memory (but a read
    of such a copy) is an error naming it.

    Before:
    ```mlir
    %a = memref.alloc() : memref<8x64xf32>
    gpu.launch_func @k::@k blocks in (...) threads in (...) args(%a : memref<8x64xf32>)
    memref.dealloc %a : memref<8x64xf32>
    ```
    After:
    ```mlir
    %t0 = gpu.wait async
    %a, %t1 = gpu.alloc async [%t0] () : memref<8x64xf32>
    %t2 = gpu.launch_func async [%t1] @k::@k blocks in (...) ...
    %t3 = gpu.dealloc async [%t2] %a : memref<8x64xf32>
    gpu.wait [%t3]   // in the entry function only
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"forward\"",
           "the function callers enter through, the one that waits for its stream">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

#endif // PMLIR_TARGET_GPU_PASSES_TD
