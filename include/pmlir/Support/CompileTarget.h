//===- CompileTarget.h - Where a program runs -------------------*- C++ -*-===//
//
// Part of pmlir.
//
// One enum for the target every layer takes: the compile pipeline's
// lowering, pmlir-run's --device, and the device profiles that price a
// rank's work before it runs (pmlir/Planning/StepTime.h).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_COMPILETARGET_H
#define PMLIR_SUPPORT_COMPILETARGET_H

namespace pmlir {

/// Where the program runs: a CPU (pmlir-cpu-pipeline, MPI collectives) or
/// one GPU per rank (pmlir-gpu-pipeline, NCCL collectives).
enum class CompileTarget { Cpu, Gpu };

} // namespace pmlir

#endif // PMLIR_SUPPORT_COMPILETARGET_H
