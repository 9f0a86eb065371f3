//===- Passes.td - Pipelining passes -----------------------*- tablegen -*-===//
//
// Part of pmlir.
//
// The passes of pipeline parallelism: stages, microbatches, schedules, the schedule report and one pipeline rank's program.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PIPELINING_TRANSFORMS_PASSES_TD
#define PMLIR_PIPELINING_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PipelinePartition : Pass<"pmlir-pipeline-partition", "mlir::ModuleOp"> {
  let summary = "cuts a program at tfm.layer boundaries into pipeline stages";
  let description = [{
    Cuts `@entry` (a forward function, or pmlir-autodiff's gradient
    function) into `stages` stages (pipeline ranks x virtual stages) of
    `pipe.fragment` ops. Layers go to stages in order, balanced by FLOPs
    (each op's `CostOpInterface`), with the embeddings counted in the first
    stage and the final norm, LM head and loss in the last; `split-points`
    overrides the balance with the first layer of each stage after the
    first. A backward layer goes with its forward layer. Other ops follow
    their data: a forward op runs on the latest stage it reads, a backward
    op on the earliest; ops that read parameters alone (positions, the loss
    seed) stay outside fragments. Values crossing stages go through
    `pipe.transfer`; a parameter gradient summed from two stages (GPT-2's
    tied `wte`, read by the embedding on the first stage and the LM head on
    the last) becomes a `pipe.stage_sum`, as Megatron's embedding group sums
    it. A forward's results go to stage 0 through transfers, so that an
    inference pipeline returns its logits on the first pipeline rank (and
    job rank 0); a scalar result (a loss) becomes every stage's through a
    `pipe.stage_sum`. The function gets `pipe.stages`.

    ```mlir
    // before: the forward of a 2-layer model
    %e = tfm.embedding %wte[%ids] ...
    %h0 = tfm.layer 0 ... { ... }
    %h1 = tfm.layer 1 ... { ... }
    // after, stages=2
    %f0 = pipe.fragment stage 0 "F" : tensor<2x16x64xf32> { ... tfm.layer 0 ... }
    %t = pipe.transfer %f0 from 0 to 1 : tensor<2x16x64xf32>
    %f1 = pipe.fragment stage 1 "F" : tensor<2x16x97xf32> { ... tfm.layer 1 ... }
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"", "the function to cut">,
    Option<"stages", "stages", "int64_t", /*default=*/"2",
           "stages: pipeline ranks x virtual stages">,
    ListOption<"splitPoints", "split-points", "int64_t",
               "the first layer of stages 1, 2, ... (default: balanced by FLOPs)">,
  ];
  let dependentDialects = ["pmlir::pipe::PipeDialect"];
}

def Microbatch : Pass<"pmlir-microbatch", "mlir::ModuleOp"> {
  let summary = "repeats a forward over the microbatches of a stacked batch";
  let description = [{
    Rewrites the forward function `@entry` to run once per microbatch: its
    inputs gain a leading dimension of `microbatches` (a batch stacked as
    `[microbatches, B, ...]`, each microbatch read through
    `tfm.microbatch`), its body is repeated per microbatch, and its results
    are those of the whole batch, tensors joined along their first dimension
    by `tfm.concat` (`[microbatches * B, ...]`) and scalars averaged. On a
    function cut into pipeline stages each repetition's fragments name their
    microbatch, which `pmlir-pipeline-schedule` then orders: the forward-only
    (inference) form of a pipeline. A training step repeats its gradient
    function itself (`pmlir-optimizer`'s `grad-accum`), so gradient
    functions are refused.

    ```mlir
    // before: stage 1 returns the logits of a batch of 2
    func.func @forward(%ids: tensor<2x16xi64> {tfm.role = #tfm<role input>}, ...) -> tensor<2x16x97xf32>
    // after, microbatches=4
    func.func @forward(%ids: tensor<4x2x16xi64> {tfm.role = #tfm<role input>}, ...) -> tensor<8x16x97xf32> {
      %ids0 = tfm.microbatch %ids index = 0 : tensor<4x2x16xi64> -> tensor<2x16xi64>
      %f0 = pipe.fragment stage 0 "F" microbatch 0 : tensor<2x16x64xf32> { ... }
      ...
      %logits = tfm.concat %l0, %l1, %l2, %l3 dim = 0 : ... -> tensor<8x16x97xf32>
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"", "the forward to repeat">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"2",
           "microbatches, each of the function's batch size">,
  ];
  let dependentDialects = ["pmlir::tfm::TfmDialect", "pmlir::pipe::PipeDialect"];
}

def PipelineSchedule : Pass<"pmlir-pipeline-schedule", "mlir::ModuleOp"> {
  let summary = "writes each pipeline rank's actions into a pipe.schedule";
  let description = [{
    Adds a `pipe.schedule` for `ranks` pipeline ranks and the module's
    program cut into stages (`pipe.stages`): `schedule` names the generator
    (gpipe, 1f1b, interleaved-1f1b with `virtual-stages` v, zb-h1, or zb-v
    with `virtual-stages=2`: rank r holds stages r and 2 ranks - 1 - r), or
    `csv` reads torch.distributed.pipelining's CSV (one line of actions per
    rank, "0F0,0F1,0B0,..."). The schedule is checked as the op's verifier
    checks it: every stage's work once per microbatch on its rank, and no
    deadlock (the simulator's message names each blocked rank). A forward
    program (inference, repeated over microbatches by `pmlir-microbatch`)
    gets the generated schedule's forwards alone, in each rank's order. A
    program repeated over microbatches must have the schedule's number of
    them.

    With `meeting-transfers` (the compile pipeline's, on every target), the
    schedule's transfers are written too, each SEND where the simulator,
    its sends never waiting, meets its RECV, and no later
    (`Schedule::withMeetingTransfers`): every rank then meets its messages
    in one order, so sends that wait for their receives (NCCL's) cannot
    wait for each other forever. Interleaved 1F1B and ZB-V, whose ranks
    send, compute and then receive from a neighbour doing the same, need it
    on GPUs; the CPU, whose sends never wait, runs the same order. A CSV's
    own transfers stay where it puts them.

    ```mlir
    pipe.schedule "1f1b" ranks 2 stages 2 microbatches 2
        [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "pmlir::pipe::ScheduleKind",
           /*default=*/"pmlir::pipe::ScheduleKind::OneFOneB",
           "a generator (gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v) or csv",
           "pmlir::pipe::scheduleKindValues()">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "pipeline ranks (default: the stages over virtual-stages)">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1", "microbatches per step">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "stages per pipeline rank (interleaved-1f1b; 2 for zb-v)">,
    Option<"csvFile", "csv", "std::string", /*default=*/"\"\"",
           "with schedule=csv: the file of actions per rank">,
    Option<"meetingTransfers", "meeting-transfers", "bool", /*default=*/"false",
           "place each send where its receive is met (where a send waits for its receive)">,
  ];
  let dependentDialects = ["pmlir::pipe::PipeDialect"];
}

def PipelineReport : Pass<"pmlir-pipeline-report", "mlir::ModuleOp"> {
  let summary = "writes the simulated schedule's bubble and memory as JSON";
  let description = [{
    Runs the module's `pipe.schedule` in the simulator with per-action costs
    (`forward`, `backward-input`, `backward-weight` in any unit; a whole
    backward costs their sum) and writes to `output` (`-` for stdout): the
    makespan, the bubble fraction next to the formula's ((p-1)/(m+p-1) for
    GPipe and 1F1B, (p-1)/(vm+p-1) interleaved, ZB-H1's), each rank's busy
    time, each stage's peak of microbatches in flight, and the timeline.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"", "the JSON file">,
    Option<"forward", "forward", "double", /*default=*/"1", "cost of a stage's forward">,
    Option<"backwardInput", "backward-input", "double", /*default=*/"1",
           "cost of a stage's input gradient">,
    Option<"backwardWeight", "backward-weight", "double", /*default=*/"1",
           "cost of a stage's weight gradient">,
    Option<"transfer", "transfer", "double", /*default=*/"0", "delay of a transfer">,
  ];
}

def PipelineLower : Pass<"pmlir-pipeline-lower", "mlir::ModuleOp"> {
  let summary = "builds one pipeline rank's program from the schedule";
  let description = [{
    From `@entry`, cut into stages (pmlir-pipeline-partition), repeated per
    microbatch (pmlir-optimizer) and partitioned on a mesh with axis `axis`,
    and the module's `pipe.schedule`, builds pipeline rank `rank`'s program:
    its fragments inlined in its schedule's order, each `pipe.transfer` out
    of the rank a `shard.send` and each one into it a `shard.recv` on
    `axis` (with the transfer's number as the message tag, `pipe.tag`),
    each `pipe.stage_sum` a `shard.all_reduce` over `axis` of the rank's
    own stages' values. Arguments the rank does not read and results it
    cannot make (other stages' parameters and updates) are dropped. Each
    sum of two values nothing else reads (a gradient's running sum over the
    microbatches) then moves up to just after its later term, so that each
    microbatch's gradients join the sum as soon as its backward pass made
    them and one microbatch's are live at a time; the sums keep their order
    and their f32 results.

    ```mlir
    // rank 0 of 2, 1F1B, 2 microbatches: 0F0 0F1 0B0 0B1
    %a = ... stage 0's forward of microbatch 0 ...
    %s = shard.send %a on @mesh grid_axes = [2] destination = [1] {pipe.tag = 1 : i64} ...
    ```
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"train_step\"",
           "the function to lower">,
    Option<"rank", "rank", "int64_t", /*default=*/"0", "the pipeline rank (pp coordinate)">,
    Option<"axis", "axis", "std::string", /*default=*/"\"pp\"", "the pipeline's mesh axis">,
    Option<"trace", "trace", "bool", /*default=*/"false",
           "mark each fragment's work (pipe.work_begin, pipe.work_end) for the trace">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect", "mlir::tensor::TensorDialect"];
}

#endif // PMLIR_PIPELINING_TRANSFORMS_PASSES_TD
