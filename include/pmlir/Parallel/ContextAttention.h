//===- ContextAttention.h - Attention over a sequence split on cp -*- C++ -*-===//
//
// Part of pmlir.
//
// One enum for how attention runs over a sequence split on the
// context-parallel axis, with its names in one place: taken by
// pmlir-context-parallel-attention, pmlir-sharding-pipeline,
// pmlir-compile-pipeline and pmlir-run's --cp-attention.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PARALLEL_CONTEXTATTENTION_H
#define PMLIR_PARALLEL_CONTEXTATTENTION_H

#include "llvm/Support/CommandLine.h"

namespace pmlir {

/// Keys and values all-gathered over cp; key/value blocks passed around cp
/// with an online softmax (pmlir-ring-attention); or heads split over cp
/// with all-to-alls in and out (Ulysses).
enum class ContextAttention { AllGather, Ring, Ulysses };

/// The alternatives of an option that takes a ContextAttention, each with
/// its name.
inline llvm::cl::ValuesClass contextAttentionValues() {
  return llvm::cl::values(
      clEnumValN(ContextAttention::AllGather, "allgather", "keys and values all-gathered over cp"),
      clEnumValN(ContextAttention::Ring, "ring",
                 "key/value blocks passed around cp, online softmax (pmlir-ring-attention)"),
      clEnumValN(ContextAttention::Ulysses, "ulysses",
                 "heads split over cp, all-to-all in and out"));
}

} // namespace pmlir

#endif // PMLIR_PARALLEL_CONTEXTATTENTION_H
