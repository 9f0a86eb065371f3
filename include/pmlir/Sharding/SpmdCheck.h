//===- SpmdCheck.h - Proof that every rank's collectives match -*- C++ -*-===//
//
// Part of pmlir.
//
// A partitioned program runs on every rank of its mesh; each collective
// completes only when every member of its group issues it, and MPI and
// NCCL match the calls of a group by their order alone. Two ranks whose
// programs issue a group's collectives in another order, of another kind,
// count or element type, hang or, worse, exchange the wrong data without a
// sign. The compiler holds every rank's program, so it can prove they
// agree before anything runs:
//
// each rank's program is traced with that rank's coordinates (the scalar
// arithmetic on process indices folded, every scf.if on them decided, each
// scf.for of constant bounds unrolled, the bodies of tfm.layer and
// pipe.fragment entered once), giving the rank's sequence of collectives,
// sends and receives; then the ranks are run against each other, as the
// runtime would run them: a collective completes when every member of its
// group is at a collective of that group, which must then agree in kind,
// reduction, axis, element type and count; a send is buffered (it never
// waits for its receiver, as the runtime's); a receive takes the oldest
// message from its source under its tag, which must have its element type
// and count. A disagreement, a rank that waits for ever, or a message no
// one receives is an error that names the two ranks (number and
// coordinates), both ops with their locations, and what differs.
//
// A condition that is not a function of the rank (data) is allowed around
// collectives only where both branches issue the same ones.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_SPMDCHECK_H
#define PMLIR_SHARDING_SPMDCHECK_H

#include "pmlir/Sharding/Grid.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <vector>

namespace pmlir::sharding {

/// The most ranks the check traces: every rank's program is traced, so a
/// larger mesh (a million devices) would cost minutes.
inline constexpr int64_t kMaxCheckedRanks = 65536;

/// Proves that the ranks of `grid`'s mesh, rank r running
/// `programs[programOf(r)]`, issue matching communication; emits the
/// first violation as an error on the op of the lower rank (with a note on
/// the other rank's op) and fails. A program the check cannot follow (a
/// collective in a loop of unknown bounds, a peer that is not a function
/// of the rank) is an error on the op that stops it.
mlir::LogicalResult verifySpmd(const Grid &grid, const Mesh &mesh,
                               llvm::ArrayRef<mlir::func::FuncOp> programs,
                               llvm::function_ref<size_t(int64_t rank)> programOf);

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_SPMDCHECK_H
