//===- RoundedArguments.h - bf16 forms of the entry's arguments -*- C++ -*-===//
//
// Part of pmlir.
//
// Part of the calling convention of a lowered entry: the arguments it takes
// after its own, each the bf16 rounding of one of them, which
// pmlir-round-arguments-once took out of the program so that the caller
// rounds once what does not change between calls (a forward's weights).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_CONVERSION_ROUNDEDARGUMENTS_H
#define PMLIR_CONVERSION_ROUNDEDARGUMENTS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <vector>

namespace pmlir {

/// Module attribute (an array of argument indices of the entry): the
/// compiled entry takes, after its own arguments, one bf16 tensor for each,
/// in order, that argument rounded to bf16 (to nearest, ties to even). The
/// caller makes them when it binds the arguments and again whenever it
/// writes one of those arguments. Where the entry updates an argument (a
/// result's tfm.updates names it), it updates the argument's form too: the
/// caller keeps that buffer across calls and does not make it again after
/// a call, and the form changes with every call.
inline constexpr llvm::StringLiteral kRoundedArgumentsAttr = "tfm.rounded_arguments";

/// Module attribute (an array of argument indices of the entry): those of
/// kRoundedArgumentsAttr's arguments the compiled entry reads only in their
/// bf16 forms. A caller that will not write them again may free them once
/// it has made the forms.
inline constexpr llvm::StringLiteral kBf16OnlyArgumentsAttr = "tfm.bf16_only_arguments";

/// The entry arguments `module`'s array attribute `name` lists (none
/// without it).
inline std::vector<int64_t> argumentList(mlir::ModuleOp module, llvm::StringRef name) {
  auto list = module->getAttrOfType<mlir::DenseI64ArrayAttr>(name);
  if (!list)
    return {};
  return std::vector<int64_t>(list.asArrayRef().begin(), list.asArrayRef().end());
}
inline std::vector<int64_t> roundedArguments(mlir::ModuleOp module) {
  return argumentList(module, kRoundedArgumentsAttr);
}
inline std::vector<int64_t> bf16OnlyArguments(mlir::ModuleOp module) {
  return argumentList(module, kBf16OnlyArgumentsAttr);
}

} // namespace pmlir

#endif // PMLIR_CONVERSION_ROUNDEDARGUMENTS_H
