//===- Passes.td - target-neutral conversions ----------------*- tablegen -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_CONVERSION_PASSES_TD
#define PMLIR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// tfm to linalg, shard to runtime calls
//===----------------------------------------------------------------------===//

def PrepareCInterface : Pass<"pmlir-prepare-c-interface", "mlir::ModuleOp"> {
  let summary = "prepares the entry function to be called through the C interface";
  let description = [{
    The first step of `pmlir-cpu-pipeline`. The entry function gets
    `llvm.emit_c_interface` (callers pass memref descriptors by pointer), and
    its arguments `bufferization.writable = false`: the caller may hand in
    read-only memory (weights mapped from a file), so bufferization must
    copy before writing into one. Arguments a result updates
    (`tfm.updates`: a training step's parameters and optimizer state) are
    the caller's own buffers and `bufferization.writable = true`, so the
    update can overwrite them in place. The binding attributes (`tfm.name`,
    `tfm.dims`, `tfm.role`, `tfm.sharding`, `tfm.global_type`,
    `tfm.head_tail_dim`, `tfm.sharded_like`) have served once the program is per-rank and are
    removed from every function, as LLVM translation does not know them, as
    is the module's `tfm.huggingface_config`. A module without the entry
    (or with only its declaration) is an error: nothing in it could be
    called.

    Before:
    ```mlir
    func.func @forward(%ids: tensor<2x8xi64> {tfm.name = "input_ids", tfm.role = #tfm<role input>}) -> ...
    ```
    After:
    ```mlir
    func.func @forward(%ids: tensor<2x8xi64> {bufferization.writable = false}) -> ...
        attributes {llvm.emit_c_interface}
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "the function callers enter">,
  ];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect"];
}

def UpdateArgumentsInPlace : Pass<"pmlir-update-arguments-in-place", "mlir::ModuleOp"> {
  let summary = "writes the results that update arguments into the arguments' buffers";
  let description = [{
    On the bufferized entry function: each result marked `tfm.updates = i`
    (the new value of argument `i`, as a training step returns its
    parameters and optimizer state) is written into argument `i`'s buffer
    and no longer returned. Where bufferization already computed it there
    (the update ran in place), nothing is copied; elsewhere (a parameter
    all-gathered after a sharded update) one `memref.copy` writes it. The
    caller then runs the next step on the same buffers, and the peak memory
    holds one copy of the model state.

    Before:
    ```mlir
    func.func @train_step(%p: memref<64xf32>, %g: memref<64xf32>)
        -> (memref<f32>, memref<64xf32> {tfm.updates = 0 : i64}) {
      ...
      return %loss, %p : memref<f32>, memref<64xf32>
    }
    ```
    After:
    ```mlir
    func.func @train_step(%p: memref<64xf32>, %g: memref<64xf32>) -> memref<f32> {
      ...
      return %loss : memref<f32>
    }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "the function callers enter">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def OutlineLayers : Pass<"pmlir-outline-layers", "mlir::ModuleOp"> {
  let summary = "turns each tfm.layer into a call of a function shared by identical layers";
  let description = [{
    Each `tfm.layer` becomes a `func.call` of a private function whose
    arguments are the values its body uses from outside (weights and
    activations, in order of first use) and whose results are the yielded
    values. Layers whose bodies print the same (the same ops on the same
    types, whatever the layer index) call one function, so the CPU
    pipeline compiles one transformer block however deep the model is, and
    the compiled code stays small. The function of a backward block (a
    `tfm.layer` with `backward`) is marked `tfm.backward_layer`, that of a
    forward block `tfm.forward_layer`, for `pmlir-buffer-peak`'s account of
    what the buffers it returns are.

    Before:
    ```mlir
    %1 = tfm.layer 0 : tensor<2x8x16xf32> {
      %n = tfm.rmsnorm %0, %g0 eps = 1.0e-06 : tensor<2x8x16xf32>, tensor<16xf32>
      tfm.yield %n : tensor<2x8x16xf32>
    }
    %2 = tfm.layer 1 : tensor<2x8x16xf32> {
      %n = tfm.rmsnorm %1, %g1 eps = 1.0e-06 : tensor<2x8x16xf32>, tensor<16xf32>
      tfm.yield %n : tensor<2x8x16xf32>
    }
    ```
    After:
    ```mlir
    %1 = call @forward_layer(%0, %g0) : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %2 = call @forward_layer(%1, %g1) : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    ...
    func.func private @forward_layer(%arg0: tensor<2x8x16xf32>, %arg1: tensor<16xf32>) -> tensor<2x8x16xf32>
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def ConvertTfmToLinalg : Pass<"pmlir-convert-tfm-to-linalg"> {
  let summary = "lowers tfm ops to linalg on tensors";
  let description = [{
    Rewrites every `tfm` op with static shapes into `linalg.generic` ops and
    `tensor` reshapes and slices, in the op's element type:

    - elementwise ops (with trailing broadcast) and activations: one parallel
      generic each;
    - `layernorm`/`rmsnorm`/`softmax`: row reductions over the last dimension,
      then one normalizing generic;
    - `matmul`: a contraction generic (batch..., m, n, k) honouring the
      transposes and a shared rank-2 rhs;
    - `attention`: two batched matmuls around a scaled, causally masked
      softmax; the G query heads sharing a kv head are viewed as the rows of
      one matmul ([B, A, S, D] as [B, K, G*S, D], a reshape), so
      grouped-query attention never repeats keys or values;
    - `rope`, `embedding`, `cross_entropy`: generics that read their partner
      element, table row or label logit with `tensor.extract`; a
      `cross_entropy_grad` of the same logits and labels later in the block
      is lowered with the forward's row max and exp sum;
    - `embedding_grad`: a scatter-add loop over the tokens into a zeroed
      table, or, where its only use adds it to a table of its type (a tied
      table's other gradient), into that table at the add;
    - `sum_squares`: per index of the first dimension (a loop the threads
      split), then over those, so the order of the sums is the shape's;
    - `split_heads`/`merge_heads`: reshape plus `linalg.transpose`; `split`:
      `tensor.extract_slice`; `tfm.layer` is inlined.

    Before:
    ```mlir
    %y = tfm.add %x, %b : tensor<2x8x16xf32>, tensor<16xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<2x8x16xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                          affine_map<(d0, d1, d2) -> (d2)>,
                                          affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                         iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%x, %b : tensor<2x8x16xf32>, tensor<16xf32>) outs(%e : tensor<2x8x16xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %s = arith.addf %in, %in_0 : f32
      linalg.yield %s : f32
    } -> tensor<2x8x16xf32>
    ```
    Ops with dynamic shapes are left alone and the pass fails on them.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::math::MathDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect"];
}

def LowerShardToRuntime : Pass<"pmlir-lower-shard-to-runtime", "mlir::ModuleOp"> {
  let summary = "lowers shard collectives on tensors to calls of the pmlir_rt_* runtime";
  let description = [{
    Collectives on tensors of static shape (f32, f64, i32, i64) become calls
    of the runtime with memref descriptors (C interface) of flat buffers and
    of the ordered grid axes, which live in a private constant
    `memref.global`; grid axis `i` is mesh axis `i` of `pmlir-run --mesh`.
    A grid of sub-axes (`tfm.grid_axes`, as `pmlir-partition` makes where
    shardings name sub-axes) needs the module's `tfm.mesh`: each grid axis
    goes to the runtime as the code of the part of the mesh it names
    (`pmlir::SubAxis::code`: a whole axis is its index, a part packs axis,
    position and size), and the runtime makes the group over those parts.

    - `all_reduce` (sum, max, min, product): input flattened and taken as a
      buffer, a fresh result buffer, `pmlir_rt_all_reduce_<type>`, the result
      buffer taken back as a tensor.
    - `all_gather` along dim k: the runtime stacks the group's blocks as
      [n, input...]; a `linalg.transpose` moves the group dim next to dim k
      and a reshape merges the two.
    - `reduce_scatter` along dim k: dim k is split into [n, block] and the n
      blocks are moved to the front (a transpose) so each is contiguous.
    - `all_to_all`: the blocks of `split_axis` go to the front as for
      reduce_scatter, `pmlir_rt_all_to_all_<type>` exchanges them, and the
      received stack merges into `concat_axis` as for all_gather.
    - `all_slice` along dim k: a `tensor.extract_slice` of this process's
      block (its index in the group from the runtime); no communication.
    - `broadcast`, `send`, `recv`: the in-group multi-index of the root, the
      destination or the source (static or dynamic) becomes the member's
      linear index in the group (the last grid axis fastest). The result of
      `send` is its input; `recv` needs a source.
    - `process_linear_index` (row-major over the grid) and
      `process_multi_index`: runtime calls that return this process's index.
    - `grid_shape`: constants (pmlir-run runs a program only on a mesh of
      its grid's shape).
    - `pipe.work_begin` and `pipe.work_end` (a pipeline fragment's work, for
      pmlir-run --trace): `pmlir_rt_trace_begin` and `_end` with the work's
      code, stage and microbatch.

    Other `shard` ops get an error naming them. `shard.grid` ops that nothing
    refers to any more are erased.

    Before:
    ```mlir
    %r = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
    ```
    After:
    ```mlir
    %flat = tensor.collapse_shape %x [[0, 1]] : tensor<4x8xf32> into tensor<32xf32>
    %in = bufferization.to_buffer %flat read_only : tensor<32xf32> to memref<32xf32>
    %out = memref.alloc() : memref<32xf32>
    %axes = memref.get_global @pmlir_grid_axes_0 : memref<1xi64>
    ...
    call @pmlir_rt_all_reduce_f32(%in_cast, %out_cast, %axes_cast, %c0_i32) : (...) -> ()
    %t = bufferization.to_tensor %out restrict writable : memref<32xf32> to tensor<32xf32>
    %r = tensor.expand_shape %t [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::func::FuncDialect", "mlir::linalg::LinalgDialect",
                           "mlir::memref::MemRefDialect", "mlir::tensor::TensorDialect"];
}

def SimplifyFreshDeallocs : Pass<"pmlir-simplify-fresh-deallocs", "mlir::ModuleOp"> {
  let summary = "takes apart the bufferization.dealloc ops of fresh buffers in one sweep";
  let description = [{
    Ownership-based deallocation ends each block with one
    `bufferization.dealloc` of every buffer the block owns, retaining what
    it returns. Upstream's `buffer-deallocation-simplification` takes such
    a dealloc apart by asking its alias analysis of every pair of buffers,
    again after each split, and each split carries the whole retained list:
    on GPT-2 small's training step (hundreds of owned buffers, the loss and
    150 norms returned) that took 104 s of a 118 s compile, growing with the
    cube of the layers.

    Most of those buffers are fresh: made by an allocation, or returned by a
    call to a function whose results are distinct allocations of its own.
    Another buffer can be a fresh one only if it is a view of it or comes
    from it (an op or call that reads it, a select, a loop); an argument of
    the function, another fresh buffer, or a value the fresh buffer does
    not reach cannot be. This pass answers that once per fresh buffer and
    then, in one sweep over each dealloc:

    - settles each retained fresh buffer related to every memref: the
      memrefs that are it leave the list (they are not freed) and its
      ownership result becomes the disjunction of their conditions;
    - splits off each fresh memref distinct from every other memref and
      every retained value into a dealloc of its own.

    What stays undecided is left to the upstream simplification, which
    runs next.

    Before (`%a`, `%b`, `%ret` allocations, `%arg` an argument):
    ```mlir
    %r:2 = bufferization.dealloc (%a, %b, %ret : ...) if (%true, %true, %true)
                            retain (%ret, %arg : ...)
    ```
    After:
    ```mlir
    bufferization.dealloc (%a : ...) if (%true)
    bufferization.dealloc (%b : ...) if (%true)
    %r1 = bufferization.dealloc retain (%arg : ...)
    %r0 = arith.ori %false, %true : i1
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def LowerDeallocations : Pass<"pmlir-lower-deallocations"> {
  let summary = "lowers bufferization.dealloc to pointer comparisons and guarded frees";
  let description = [{
    Each `bufferization.dealloc` becomes, in place, what upstream's
    `bufferization-lower-deallocations` computes in its helper function:
    memref `i` is freed where its condition holds and its base pointer is
    none of the retained memrefs' and none of the earlier memrefs'; a
    retained memref's ownership is the disjunction of the conditions of the
    memrefs it aliases. Upstream lowers a dealloc of two memrefs or more by
    storing the pointers and conditions into small buffers and calling
    `dealloc_helper`, whose loops read them: on a GPU those buffers would be
    device memory the host reads. Here everything stays in registers on the
    host, at the cost of `memrefs x (memrefs + retained)` comparisons, which
    the deallocation simplification keeps small (a ring attention's
    `scf.if` choosing between buffers makes one of two memrefs).

    ```mlir
    %own = bufferization.dealloc (%a, %b : memref<8xf32>, memref<f32>)
        if (%true, %c) retain (%r : memref<8xf32>)
    ```
    becomes the base pointers of `%a`, `%b`, `%r`; `%a` freed if
    `%a != %r`; `%b` freed if `%c && %b != %r && %b != %a`; `%own` =
    `(%a == %r) || (%c && %b == %r)`.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def DeallocAfterLastUse : Pass<"pmlir-dealloc-after-last-use"> {
  let summary = "moves each memref.dealloc to just after the last use of its buffer";
  let description = [{
    Ownership-based deallocation frees a buffer at the end of the block that
    allocated it, so every temporary of a transformer block stays alive
    until the block returns. For each `memref.dealloc` of a `memref.alloc`
    in the same block, or of a buffer a `func.call` in the same block
    returned (the caller owns it: a transformer block's activations, kept
    until that block's backward pass, and its gradients), this pass finds
    the last op of the block that uses
    the buffer or any view of it (casts, reshapes, subviews, also inside
    nested regions) and moves the dealloc right after it. Buffers that
    escape through a terminator are left alone. Peak memory becomes the
    buffers live at once, not all buffers of the block.

    Before:
    ```mlir
    %a = memref.alloc() : memref<128x768xf32>
    linalg.generic ... outs(%a ...)
    linalg.generic ... ins(%a ...) outs(%b ...)
    ... (many more buffers)
    memref.dealloc %a : memref<128x768xf32>
    ```
    After: the dealloc follows the second generic.
  }];
}

def GroupMessages : Pass<"pmlir-group-messages", "mlir::ModuleOp"> {
  let summary = "issues the sends and receives that follow each other as one group";
  let description = [{
    NCCL's send waits on the GPU until its receive is posted. A pipeline
    stage in its steady state sends one way and receives the other
    (1F1B: the activation forward, then the next gradient back); its
    neighbour does the opposite, so two lone sends would wait for each
    other forever. Issued as one group, neither waits for the other
    (`pmlir_rt_message_group`: NCCL's ncclGroupStart/End; MPI's sends
    never wait). Megatron-LM and torch's pipelining batch their P2P
    operations the same way.

    On bufferized IR, after the deallocs are placed: in each block, a run of
    calls of the runtime's `send` and `recv` entries, with nothing between
    them but ops without memory effects, allocations and deallocs, becomes
    a group when it holds two calls or more. A group's messages run at once,
    so a receive into a buffer that a send of the run reads (or the other
    way round: a ring forwards the block it has just received) ends the run
    before it. A call of
    `pmlir_rt_message_group(count)` goes before the first, and the deallocs
    inside the run move after its last call: the runtime holds the group's
    buffers until then. Any other op (a loop, a copy, a kernel, a
    collective) ends a run.

    With `sink-messages` (the GPU pipeline's: NCCL's send waits for its
    receive), a run also takes the next message past ops its messages can
    move past, and they move down to it: ops that hold no call (which could
    communicate), write or free no buffer a send of the run reads and touch
    none a receive writes. A ring attention's stage then sends its block on
    together with receiving the next, after it computes with this one,
    where otherwise every stage's send would wait for a receive behind
    compute. (On the CPU, MPI's sends do not wait, and a send issued before
    the compute lets the message travel meanwhile.)

    Before:
    ```mlir
    call @pmlir_rt_send_f32(%act, %axes, %c1, %c3) : ...
    memref.dealloc %act_buffer : memref<4x8xf32>
    %grad = memref.alloc() : memref<4x8xf32>
    call @pmlir_rt_recv_f32(%grad_flat, %axes, %c1, %c2) : ...
    ```
    After:
    ```mlir
    call @pmlir_rt_message_group(%c2) : (i64) -> ()
    call @pmlir_rt_send_f32(%act, %axes, %c1, %c3) : ...
    %grad = memref.alloc() : memref<4x8xf32>
    call @pmlir_rt_recv_f32(%grad_flat, %axes, %c1, %c2) : ...
    memref.dealloc %act_buffer : memref<4x8xf32>
    ```
  }];
  let options = [
    Option<"sinkMessages", "sink-messages", "bool", /*default=*/"false",
           "move a run of messages down past compute that leaves their buffers "
           "alone, to the next message (where a send waits for its receive)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect"];
}

def BufferPeak : Pass<"pmlir-buffer-peak", "mlir::ModuleOp"> {
  let summary = "writes the bytes a bufferized entry holds at its heaviest point on the module";
  let description = [{
    Walks `entry` of a bufferized module in program order, into the
    functions it calls, counting the bytes of the buffers live at each point
    (a `memref.alloc` adds its buffer, a `memref.dealloc` of it or of a view
    of it removes it; a call holds the callee's own heaviest point on top of
    the caller's live buffers for its duration and leaves the buffers it
    returns; the heavier branch of a region counts, and a loop that keeps
    buffers keeps them for each of its iterations). Arguments are not
    counted. The heaviest point is written on the module as
    `tfm.buffer_peak`: `peak_bytes`; `by_source`, those bytes by where the
    buffers come from (`forward_layers`: returned by a forward transformer
    block, the activations kept for the backward pass; `backward_layers`:
    returned by a backward block, gradients; `entry`: allocated by the
    entry itself or a function that is no block; `in_call`: inside the call
    that runs there); `result_bytes`, what the entry returns; `at`, the op
    there inside its calls; `largest`, the five largest buffers live there.
    A buffer of dynamic shape, recursion, or a loop that keeps buffers over
    an unknown number of iterations gives `{error = "..."}` instead.
    Every target's bufferization ends with it; `pmlir-run --predict` reads
    it (docs/pmlir-run.md). The IR is otherwise unchanged.

    ```mlir
    module attributes {tfm.buffer_peak = {at = "@step: call @step_layer (loc(...)) > ...",
        by_source = {backward_layers = 0 : i64, entry = 4096 : i64,
                     forward_layers = 16384 : i64, in_call = 8192 : i64},
        largest = [{bytes = 8192 : i64, loc = "loc(...)", type = "memref<32x64xf32>"}, ...],
        peak_bytes = 28672 : i64, result_bytes = 4 : i64}} { ... }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "the entry function">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def StepWork : Pass<"pmlir-step-work", "mlir::ModuleOp"> {
  let summary = "writes what a bufferized entry does, in program order, on the module";
  let description = [{
    Walks `entry` of a bufferized module in program order, into the
    functions it calls (a loop of a known trip count repeats its body's
    work; the heavier branch of an if counts), and lists its work as
    compute segments between communications, written on the module as
    `tfm.step_work`:

    - `gemms`: every GEMM kernel called (a linalg op carrying its
      `library_call`, the runtime kernel it becomes), with its operands'
      shapes;
    - `events`, in program order: a compute segment is `[0, parallel loop
      bytes, parallel loop operations, serial loop bytes, serial loop
      operations, copy bytes, loops, (gemm, calls)...]`, where a loop nest
      (any other linalg op) counts the bytes of its operands and its
      iterations times the operations of its body (a math function as 12),
      on the threads where that work passes the runtime's threshold for
      splitting a loop, else on one; a communication (a call of the
      runtime's collectives, sends and receives, RuntimeAbi.def) is
      `[1, kind, bytes, peer, tag, axes...]`, its larger buffer's bytes, a
      transfer's peer and tag (a broadcast's root as the peer; -1 where
      none), and its mesh axes' codes.

    The GPU pipeline runs it once its kernels are made (after
    `pmlir-gpu-host-buffers`), where a loop nest may have been fused into
    another's kernel: each `gpu.launch_func` is then one loop (a kernel
    launch) with its buffers' bytes and, as its operations, their elements
    (a load or store each); each call of a GEMM kernel (the library call a
    GEMM linalg op became) a GEMM; each `gpu.memcpy` a copy.

    A transfer's peer may be computed from the rank's coordinates
    (`pmlir_rt_coordinate`, `pmlir_rt_index_in_group` and integer
    arithmetic, as a ring's neighbour is): `rank` names the job's rank the
    program runs on, on the module's `tfm.mesh`. A dynamic shape,
    recursion, a loop of an unknown trip count, or a runtime call whose
    axes, peer or tag are no constant (nor computed from the rank's
    coordinates) gives `{error = "..."}` instead. Runs with `pmlir-buffer-peak` under
    `predict`; `pmlir-run --predict` prices the segments on a device
    profile and runs every rank's events against the others' to predict a
    step's time (docs/pmlir-run.md). The IR is otherwise unchanged.

    ```mlir
    module attributes {tfm.step_work = {
        events = [array<i64: 0, 0, 0, 16384, 4096, 0, 1, 0, 2>,
                  array<i64: 1, 0, 16384, -1, -1, 1>],
        gemms = [{kernel = "pmlir_matmul_f32_r22_t00", lhs = array<i64: 64, 32>,
                  out = array<i64: 64, 64>, rhs = array<i64: 32, 64>} ]}} { ... }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "the entry function">,
    Option<"rank", "rank", "int64_t", /*default=*/"-1",
           "the job's rank the program runs on (-1: none)">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion and library calls (the targets mark which contractions are calls)
//===----------------------------------------------------------------------===//

def FuseElementwise : Pass<"pmlir-fuse-elementwise"> {
  let summary = "fuses elementwise linalg producers into their consumers, except library calls";
  let description = [{
    Upstream `linalg-fuse-elementwise-ops`, with three restrictions. A
    generic that names a library call, or is a GEMM a target's kernel
    selection will name one for (pmlir/Conversion/Contraction.h), is neither
    fused into nor fused away, so that it stays one kernel call. A producer
    is fused only into its sole consumer: one with several consumers is
    computed once and stored, not recomputed in each (along a residual
    stream that would recompute every earlier layer's adds in every later
    layer). A producer is not fused into a consumer of its block that a
    call (a transformer block's, a collective's) comes between: fusing
    moves its work to the consumer and keeps its operands live across the
    call (a training step's running sum of its microbatches' gradients
    would keep every microbatch's gradients live until the last). Bias
    adds, activations and the normalizing step of norms fuse with each
    other.

    With `transposes` (a GPU's choice, where each is a pass over memory of
    its own), transposes become generics and reshapes between generics move
    onto their producers, so that splitting and merging heads fuse with the
    bias adds and the rest around them.
  }];
  let options = [
    Option<"transposes", "transposes", "bool", "false",
           "fuse transposes and the reshapes around them too">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}


def StoreBf16 : Pass<"pmlir-store-bf16", "mlir::ModuleOp"> {
  let summary = "stores the tensors passed between kernels in bf16, computing in f32";
  let description = [{
    Mixed precision for a whole program on linalg tensors, after fusion (so
    that only tensors really written to memory are rounded) and before a
    target selects its GEMM kernels:
    - an elementwise generic (every loop parallel, its output a
      `tensor.empty` it does not read) writes bf16: its body computes in
      f32 as before and rounds the value it yields (`arith.truncf`);
    - every GEMM (pmlir/Conversion/Contraction.h) on f32 takes bf16
      operands and sums in f32: an operand not already bf16 (a weight, a
      reduction's result) is rounded by one elementwise generic right after
      its definition, shared by all its GEMMs; the result is bf16 where the
      GEMM starts from a zero fill (a library GEMM sums in f32 and rounds
      once), else f32 (a gradient accumulated into a buffer);
    - reshapes, slices and transposes of a bf16 tensor are bf16;
    - every generic that reads a bf16 tensor extends it to f32 in its body,
      so that reductions (norms' and softmax's statistics, a loss, a
      weight gradient's sum over the batch) sum and store f32; so does
      elementwise work on statistics alone (a norm's mean and reciprocal
      deviation from its sums), whose rounding every element of a row
      would inherit.
    A tensor is rounded only where all its uses read it so: one that is
    returned, passed to a call (a layer function, a collective), read by
    `tensor.extract` or updated in place stays f32, and with it the
    program's arguments and results.

    Before:
    ```mlir
    %h = linalg.generic {...parallel...} ins(%x, %b : tensor<8x64xf32>, tensor<64xf32>)
           outs(%e : tensor<8x64xf32>) { ... arith.addf ... }
    %y = linalg.generic {...GEMM...} ins(%h, %w : tensor<8x64xf32>, tensor<64x16xf32>)
           outs(%zero : tensor<8x16xf32>) { mulf, addf }
    return %y : tensor<8x16xf32>
    ```
    After: `%h` is `tensor<8x64xbf16>` (its body ends in `arith.truncf`),
    `%w` is rounded by a generic into `tensor<64x16xbf16>`, and the GEMM
    extends both operands in its body and sums into its f32 output.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def RoundArgumentsOnce : Pass<"pmlir-round-arguments-once", "mlir::ModuleOp"> {
  let summary = "takes the bf16 roundings of the entry's read-only arguments from the caller";
  let description = [{
    After `pmlir-store-bf16`, a forward rounds every weight to bf16 on each
    call (one generic per weight, `arith.truncf` of each element), though
    the weights do not change between calls: at GPT-2 small's batch 1 that
    is a third of a bf16 forward on the CPU. This pass hands the rounding to
    the caller, who does it once when it binds the arguments.

    An argument of the entry that is read-only (`bufferization.writable =
    false`, as `pmlir-prepare-c-interface` marks every argument no result
    updates) and rounded to bf16 (by a generic that does nothing else, of
    the whole argument or of a slice of it) is given a second form: a bf16
    argument appended to the entry, which replaces every such rounding (a
    slice's by the same slice of it). The f32 argument stays where it was,
    for what reads it in f32 (an embedding's gather of a table whose bf16
    form feeds a tied LM head) or for nothing. Roundings in a private
    function (a layer's) of a parameter that every call passes a read-only
    argument of the entry move to the calls first, so that they reach the
    entry too; a parameter the function then no longer reads leaves it and
    its calls. The module's `tfm.rounded_arguments` lists, for each
    appended argument in order, the entry argument it is the bf16 rounding
    of (to nearest, ties to even): the caller rounds it when it binds the
    arguments and again whenever it writes that argument.
    `tfm.bf16_only_arguments` lists those of them the program reads only in
    bf16 (no longer in f32): a caller that will not write them again (a
    forward's) may free their f32 buffers once it has made the forms.

    A training step updates its parameters (`bufferization.writable =
    true`), and their roundings leave the layers all the same (the step
    reads each parameter before it writes its buffer). Where the step's
    result that updates one (`tfm.updates`) is written whole by an
    elementwise generic whose loops are all parallel (AdamW's loop), the
    parameter gets a bf16 form too, an argument the step updates
    (`bufferization.writable = true`): it replaces the roundings, and that
    loop gets one more output, the rounding of the new parameter, written
    into the form and returned with `tfm.updates` naming it. The caller
    makes the form when it binds and whenever it writes the parameter
    itself; the step keeps it current, so no weight is rounded in the step
    apart from where it is updated. Any other updated parameter keeps one
    rounding in each block that rounds it, where the block first does: a
    weight is rounded once a step, its bf16 form read by the layer's
    forward and backward functions (as autocast's cache of weight casts
    is), instead of once in each.

    Before:
    ```mlir
    func.func @forward(%x: tensor<8x64xbf16>, %w: tensor<64x16xf32> {bufferization.writable = false}) -> ... {
      %e = tensor.empty() : tensor<64x16xbf16>
      %r = linalg.generic {...parallel...} ins(%w : tensor<64x16xf32>) outs(%e : tensor<64x16xbf16>) {
        ^bb0(%in: f32, %out: bf16):
          %t = arith.truncf %in : f32 to bf16
          linalg.yield %t : bf16
      } -> tensor<64x16xbf16>
      ... uses of %r ...
    ```
    After: `@forward(%x, %w, %w_bf16: tensor<64x16xbf16> {bufferization.writable = false})`,
    the uses of `%r` read `%w_bf16`, and the module carries
    `tfm.rounded_arguments = array<i64: 1>` and, `%w` having no other use,
    `tfm.bf16_only_arguments = array<i64: 1>`.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "the function callers enter">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def LinalgToLibraryCalls : Pass<"pmlir-linalg-to-library-calls", "mlir::ModuleOp"> {
  let summary = "replaces bufferized linalg ops that name a pmlir library call with calls";
  let description = [{
    After bufferization, every `linalg.generic` whose `library_call` starts
    with `pmlir_` (the matmuls a target's kernel selection marked:
    `pmlir-select-cpu-kernels`, `pmlir-select-gpu-kernels`) becomes
    a `func.call` of that name on its operands, cast to fully dynamic strided
    memrefs, and a private declaration with `llvm.emit_c_interface`, so that
    the callee receives memref descriptors (`_mlir_ciface_<name>`). pmlir-run
    binds these names to the runtime's BLAS or cuBLASLt kernels. Other linalg ops are untouched.

    The call takes one more operand, `accumulate` (i1): the kernel adds into
    the output when true and overwrites it when false. It is false when the
    op right before is a `linalg.fill` of zero into the output, which is then
    erased, so that the output is written once instead of zeroed, read back
    and written.

    Before:
    ```mlir
    linalg.generic {..., library_call = "pmlir_matmul_f32_r32_t00"}
        ins(%a, %w : memref<2x3x16xf32>, memref<16x8xf32>) outs(%c : memref<2x3x8xf32>) {...}
    ```
    After:
    ```mlir
    %0 = memref.cast %a : memref<2x3x16xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
    ...
    %true = arith.constant true
    call @pmlir_matmul_f32_r32_t00(%0, %1, %2, %true) : (...) -> ()
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
}

#endif // PMLIR_CONVERSION_PASSES_TD
