//===- PipeEnums.td - The pipe dialect's enums -------------*- tablegen -*-===//
//
// Part of pmlir.
//
// The kinds of pipeline work and of schedules: one enum each, read by the
// schedule generators and simulator (plain C++, Schedule.h), the pipe ops'
// attributes and pmlir-run's flags alike. Their names are
// torch.distributed.pipelining's (actions) and pmlir-run's (schedules).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_PIPE_IR_PIPEENUMS_TD
#define PMLIR_DIALECT_PIPE_IR_PIPEENUMS_TD

include "mlir/IR/EnumAttr.td"

// The compute kinds' values are the runtime's trace codes for them
// (RuntimeAbi.def's PMLIR_RT_WORK), matched there by name.
def Pipe_ActionKind : I32EnumAttr<"ActionKind", "a kind of pipeline work", [
      I32EnumAttrCase<"Forward", 0, "F">,
      I32EnumAttrCase<"Backward", 1, "B">,
      I32EnumAttrCase<"BackwardInput", 2, "I">,
      I32EnumAttrCase<"BackwardWeight", 3, "W">,
      I32EnumAttrCase<"SendForward", 4, "SEND_F">,
      I32EnumAttrCase<"RecvForward", 5, "RECV_F">,
      I32EnumAttrCase<"SendBackward", 6, "SEND_B">,
      I32EnumAttrCase<"RecvBackward", 7, "RECV_B">
    ]> {
  let cppNamespace = "::pmlir::pipe";
  let genSpecializedAttr = 0;
  let parameterPrinter = "$_printer.printKeywordOrString(stringifyActionKind($_self))";
}

def Pipe_ScheduleKind : I32EnumAttr<"ScheduleKind", "how a program's stages are scheduled", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"GPipe", 1, "gpipe">,
      I32EnumAttrCase<"OneFOneB", 2, "1f1b">,
      I32EnumAttrCase<"Interleaved1F1B", 3, "interleaved-1f1b">,
      I32EnumAttrCase<"ZeroBubbleH1", 4, "zb-h1">,
      I32EnumAttrCase<"ZeroBubbleV", 5, "zb-v">,
      I32EnumAttrCase<"Csv", 6, "csv">
    ]> {
  let cppNamespace = "::pmlir::pipe";
  let genSpecializedAttr = 0;
  // In quotes where a name is no keyword ("1f1b"), so that it parses back.
  let parameterPrinter = "$_printer.printKeywordOrString(stringifyScheduleKind($_self))";
}

#endif // PMLIR_DIALECT_PIPE_IR_PIPEENUMS_TD
