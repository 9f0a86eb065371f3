//===- PipeOps.td - The pipe pipeline dialect --------------*- tablegen -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_PIPE_IR_PIPEOPS_TD
#define PMLIR_DIALECT_PIPE_IR_PIPEOPS_TD

include "pmlir/Dialect/Pipe/IR/PipeEnums.td"
include "pmlir/Dialect/Tfm/IR/TfmInterfaces.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Pipe_Dialect : Dialect {
  let name = "pipe";
  let cppNamespace = "::pmlir::pipe";
  let useDefaultAttributePrinterParser = 1;
  let summary = "Pipeline stages, transfers and schedules of tfm programs";
  let description = [{
    The `pipe` dialect cuts a global tfm program (a model, its gradient
    function or its training step) into pipeline stages, in the spirit of
    Shardy's `mpmd` and torch.distributed.pipelining's action IR:

    - a `pipe.fragment` holds the work of one stage of one kind (forward F,
      backward B, or the backward split into input gradient I and weight
      gradient W) for one microbatch;
    - a `pipe.transfer` moves a value from one stage to another;
    - a `pipe.stage_sum` adds values that several stages hold (the loss,
      the gradient norm's squares, a tied embedding's gradient) for every
      rank;
    - a `pipe.schedule` lists each pipeline rank's actions in order.

    A stage runs on the pipeline rank whose actions name it: rank `s mod
    ranks` for stage `s` in the loop schedules (GPipe, 1F1B, interleaved,
    ZB-H1), ranks `r` and `2 ranks - 1 - r` in ZB-V's V. Fragments run on the
    dp and tp ranks of their pipeline rank as any other tfm op, so the
    program is sharded on its mesh with the fragments in place; one
    pipeline rank's program is then the fragments of its stages in its
    schedule's order, with each transfer a send or a receive on the `pp`
    axis (pmlir-pipeline-lower).
  }];
}

class Pipe_Op<string mnemonic, list<Trait> traits = []>
    : Op<Pipe_Dialect, mnemonic, traits>;

// The kinds as attributes (`#pipe<action_kind F>` in the generic form; the
// ops print them as the quoted names they always had: "F", "1f1b").
def Pipe_ActionKindAttr : EnumAttr<Pipe_Dialect, Pipe_ActionKind, "action_kind">;
def Pipe_ScheduleKindAttr : EnumAttr<Pipe_Dialect, Pipe_ScheduleKind, "schedule_kind">;

def Pipe_ActionAttr : AttrDef<Pipe_Dialect, "Action"> {
  let mnemonic = "action";
  let summary = "one action of a pipeline rank: a kind of work on a stage and a microbatch";
  let description = [{
    `#pipe.action<1, F, 3>` runs stage 1's forward on microbatch 3; the
    pipe.schedule op prints it as torch.distributed.pipelining does, "1F3".
  }];
  let parameters = (ins "int64_t":$stage, EnumParameter<Pipe_ActionKind>:$kind,
                    "int64_t":$microbatch);
  let assemblyFormat = "`<` $stage `,` $kind `,` $microbatch `>`";
  // Stages and microbatches count from 0: a negative one names no work.
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The action as the schedules' plain C++ holds it.
    ::pmlir::pipe::Action getAction() const {
      return {getStage(), getKind(), getMicrobatch()};
    }
  }];
}

def Pipe_ActionListsAttr
    : TypedArrayAttrBase<TypedArrayAttrBase<Pipe_ActionAttr, "a pipeline rank's actions">,
                         "each pipeline rank's actions">;

def Pipe_FragmentOp : Pipe_Op<"fragment", [SingleBlockImplicitTerminator<"YieldOp">,
                                           RecursiveMemoryEffects,
                                           Tfm_InlineBody]> {
  let summary = "one stage's forward, backward, input or weight gradient work";
  let description = [{
    The body runs once where the op stands: it uses values from above (the
    stage's parameters, values of its own stage's other fragments, and the
    results of transfers into the stage) and yields what other fragments,
    transfers or the function's results read. `kind` is F (forward), B
    (the whole backward), I (the input gradient) or W (the weight
    gradient); `microbatch` is set once a training step repeats the
    fragments per microbatch.

    ```mlir
    %h = pipe.fragment stage 0 "F" microbatch 1 : tensor<2x16x64xf32> {
      ...
      pipe.yield %out : tensor<2x16x64xf32>
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$stage, Pipe_ActionKindAttr:$kind,
                   OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$microbatch);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `stage` $stage custom<QuotedKind>($kind) (`microbatch` $microbatch^)? (`:` type($results)^)? attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def Pipe_YieldOp : Pipe_Op<"yield", [Pure, Terminator, HasParent<"FragmentOp">, ReturnLike]> {
  let summary = "returns the values a pipe.fragment makes for others";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def Pipe_TransferOp : Pipe_Op<"transfer", [Pure, SameOperandsAndResultType,
                                           Tfm_ShardingRuleOpInterface, Tfm_SequenceLocal,
                                           Tfm_KeepsZeroPadding]> {
  let summary = "moves a value from one stage to another";
  let description = [{
    The result is the input, on stage `to`. On the pipeline ranks of the
    two stages it becomes a send and a receive of each rank's block on the
    `pp` axis; between stages of one rank it is the value itself.

    ```mlir
    %r = pipe.transfer %h from 0 to 1 : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, ConfinedAttr<I64Attr, [IntNonNegative]>:$from,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$to);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `from` $from `to` $to attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Pipe_StageSumOp : Pipe_Op<"stage_sum", [Pure, Tfm_ShardingRuleOpInterface,
                                            Tfm_KeepsZeroPadding]> {
  let summary = "the sum of values held by several stages, on every rank";
  let description = [{
    Operand `i` is held by stage `stages[i]`; the result is their sum, on
    every pipeline rank: an all-reduce over the `pp` axis, to which a rank
    adds the operands of its own stages (zeros where it holds none). The
    loss of the last stage, the squares of the gradient norm of all stages
    and the gradient of an embedding that the first and the last stage
    share (GPT-2's tied `wte`, as Megatron's embedding group sums it) are
    stage sums.

    ```mlir
    %g = pipe.stage_sum %head_grad, %embedding_grad stages [1, 0]
        : tensor<97x64xf32>, tensor<97x64xf32> -> tensor<97x64xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, DenseI64ArrayAttr:$stages);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$inputs `stages` $stages attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Pipe_ScheduleOp : Pipe_Op<"schedule"> {
  let summary = "each pipeline rank's actions, in order";
  let description = [{
    `actions[r]` is rank `r`'s list of `#pipe.action`s, written in
    torch.distributed.pipelining's format: `<stage><kind><microbatch>` with
    kind F, B, I, W, SEND_F, RECV_F, SEND_B or RECV_B. `kind` names the generator (gpipe, 1f1b,
    interleaved-1f1b, zb-h1, zb-v) or `csv` for a schedule read from a file.
    A stage lives on the first rank whose list names it. The verifier checks
    that every stage's work runs once per microbatch on its rank and, with
    the simulator, that the schedule cannot deadlock.

    ```mlir
    pipe.schedule "1f1b" ranks 2 stages 2 microbatches 2
        [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
    ```
  }];
  let arguments = (ins Pipe_ScheduleKindAttr:$kind, ConfinedAttr<I64Attr, [IntPositive]>:$ranks,
                   ConfinedAttr<I64Attr, [IntPositive]>:$stages,
                   ConfinedAttr<I64Attr, [IntPositive]>:$microbatches,
                   Pipe_ActionListsAttr:$actions);
  let assemblyFormat = [{
    custom<QuotedKind>($kind) `ranks` $ranks `stages` $stages `microbatches` $microbatches
    custom<ActionLists>($actions) attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The schedule the attributes spell (verified).
    ::pmlir::pipe::Schedule getSchedule();
  }];
}

// The start and end of a fragment's work on a pipeline rank, for the trace
// of pmlir-run --trace: pmlir-pipeline-lower{trace} puts them around each
// fragment it inlines, and pmlir-lower-shard-to-runtime makes them calls of
// the runtime's pmlir_rt_trace_begin and _end. They write (the trace), so
// that nothing moves them.
class Pipe_WorkMarkOp<string mnemonic, string edge>
    : Pipe_Op<mnemonic, [MemoryEffects<[MemWrite]>]> {
  let summary = "marks where a fragment's work " # edge # "s in the trace";
  let description = [{
    ```mlir
    pipe.work_begin stage 1 "F" microbatch 3
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$stage, Pipe_ActionKindAttr:$kind,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$microbatch);
  let assemblyFormat = "`stage` $stage custom<QuotedKind>($kind) `microbatch` $microbatch attr-dict";
  let hasVerifier = 1;
}

def Pipe_WorkBeginOp : Pipe_WorkMarkOp<"work_begin", "start">;
def Pipe_WorkEndOp : Pipe_WorkMarkOp<"work_end", "end">;

#endif // PMLIR_DIALECT_PIPE_IR_PIPEOPS_TD
