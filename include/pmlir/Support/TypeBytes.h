//===- TypeBytes.h - The bytes a typed value takes in memory ---*- C++ -*-===//
//
// Part of pmlir.
//
// One answer, for every pass that prices memory (buffer peaks, step work,
// sharding costs, the planner, model summaries), to how many bytes an
// element and a statically shaped tensor or buffer take. Header only: it
// needs MLIR's types, and PMLIRSupport links no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_TYPEBYTES_H
#define PMLIR_SUPPORT_TYPEBYTES_H

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace pmlir {

/// The bytes one element of type `element` takes: its bits rounded up to
/// whole bytes, at least one (an i1 is a byte), an index 8.
inline int64_t elementBytes(mlir::Type element) {
  int64_t bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
  return std::max<int64_t>(1, (bits + 7) / 8);
}

/// The bytes of a tensor or buffer of `type`; nullopt where its shape is
/// not static.
inline std::optional<int64_t> staticBytes(mlir::ShapedType type) {
  if (!type.hasStaticShape())
    return std::nullopt;
  return type.getNumElements() * elementBytes(type.getElementType());
}

/// The bytes of a buffer (a memref) of `type`; nullopt for another type
/// or a shape that is not static.
inline std::optional<int64_t> bufferBytes(mlir::Type type) {
  auto memref = mlir::dyn_cast<mlir::MemRefType>(type);
  return memref ? staticBytes(memref) : std::nullopt;
}

} // namespace pmlir

#endif // PMLIR_SUPPORT_TYPEBYTES_H
