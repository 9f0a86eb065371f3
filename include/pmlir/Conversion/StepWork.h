//===- StepWork.h - What a bufferized program does, in program order -*- C++ -*-===//
//
// Part of pmlir.
//
// After bufferization a rank's program is library GEMMs (linalg.generic ops
// carrying the runtime kernel they become), loop nests (the other linalg
// ops), copies, and calls of the runtime's collectives, sends and receives,
// all on static shapes: what one call does is known before it runs. This
// walks the entry in program order, into the functions it calls and over
// loops of known trip counts, and lists its work as compute segments (the
// GEMMs by kernel and shape, the loops' bytes and operations, the copies'
// bytes) between its communication (each collective with its bytes and mesh
// axes, each transfer with its peer and tag). pmlir-run --predict prices
// the segments on a device profile and runs every rank's list against the
// others' (pmlir/Planning/StepTime.h).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_CONVERSION_STEPWORK_H
#define PMLIR_CONVERSION_STEPWORK_H

#include "pmlir/Sharding/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace pmlir {

struct StepWork {
  /// One GEMM kernel call: the runtime kernel (RuntimeAbi.def's GEMM
  /// family, "pmlir_matmul_f32_r32_t00") and its operands' shapes.
  struct Gemm {
    std::string kernel;
    std::vector<int64_t> lhs, rhs, out;
    /// 2 per multiply-add: the output's elements times the contraction.
    double flops() const;
    bool operator<(const Gemm &other) const {
      return std::tie(kernel, lhs, rhs, out) <
             std::tie(other.kernel, other.lhs, other.rhs, other.out);
    }
  };

  /// Work between two communications.
  struct Compute {
    /// Calls per GEMM (an index into `gemms`).
    std::map<int64_t, int64_t> gemmCalls;
    /// Loop nests the CPU runs split over its threads (their work, the
    /// iterations times the operations of one, passes
    /// rt::abi::kParallelMinWork) and those it runs on one thread: the
    /// bytes of their operands and their operations (a math function counts
    /// kMathOperations). A GPU's kernels (gpu.launch_func) are parallel:
    /// their buffers' bytes, and their elements as operations.
    int64_t parallelLoopBytes = 0, parallelLoopOperations = 0;
    int64_t serialLoopBytes = 0, serialLoopOperations = 0;
    /// Bytes memref.copy reads (and writes).
    int64_t copyBytes = 0;
    /// Loop nests, or a GPU's kernels.
    int64_t loops = 0;

    bool empty() const { return gemmCalls.empty() && loops == 0 && copyBytes == 0; }
    Compute &operator+=(const Compute &other);
  };

  /// A collective, send or receive of the runtime.
  struct Communication {
    sharding::CollectiveKind kind;
    /// The larger of its buffers (what the comm report counts).
    int64_t bytes = 0;
    /// The runtime's codes of its mesh axes (pmlir::SubAxis::code).
    std::vector<int64_t> axes;
    /// A send's or receive's peer (its index in the group over `axes`) and
    /// tag; a broadcast's root in `peer`; -1 where none.
    int64_t peer = -1, tag = -1;
    /// A send or receive issued together with the next one
    /// (pmlir_rt_message_group): every message of a group but its last.
    bool groupedWithNext = false;
  };

  struct Event {
    /// Compute when `communication` is unset.
    Compute compute;
    std::optional<Communication> communication;
  };

  std::vector<Gemm> gemms;
  std::vector<Event> events;

  /// The whole compute of the step, all segments together.
  Compute total() const;
  /// The GEMMs' FLOPs of the step.
  double gemmFlops() const;

  /// As a module attribute (tfm.step_work) and back.
  mlir::DictionaryAttr toAttribute(mlir::MLIRContext *context) const;
  static std::optional<StepWork> fromAttribute(mlir::DictionaryAttr attr);
};

/// A math function (exp, tanh, ...) counts as this many operations of a
/// loop body: the CPU evaluates it as a polynomial (pmlir-approximate-math).
inline constexpr int64_t kMathOperations = 12;

/// What one call of `entry` of a bufferized module does on the job's rank
/// `rank` (-1: none; its coordinates on the module's tfm.mesh evaluate the
/// peers a program computes), or nullopt with `error` set: a buffer or loop
/// range of dynamic shape, recursion, a loop over an unknown number of
/// iterations, or a runtime call whose bytes, axes, peer or tag are not
/// known.
std::optional<StepWork> measureStepWork(mlir::func::FuncOp entry, int64_t rank, std::string &error);

/// Module attribute that pmlir-step-work writes: the StepWork of the
/// entry, or {error = "..."} where it has none.
inline constexpr llvm::StringLiteral kStepWorkAttr = "tfm.step_work";

} // namespace pmlir

#endif // PMLIR_CONVERSION_STEPWORK_H
