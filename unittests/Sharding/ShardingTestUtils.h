//===- ShardingTestUtils.h - Contexts and meshes for engine tests -*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_UNITTESTS_SHARDING_SHARDINGTESTUTILS_H
#define PMLIR_UNITTESTS_SHARDING_SHARDINGTESTUTILS_H

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Sharding.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

namespace pmlir::sharding::testing {

/// A context with the dialects engine tests parse.
inline void loadDialects(mlir::MLIRContext &context) {
  context.loadDialect<tfm::TfmDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
}

/// The #tfm.mesh written `text` ("x = 2, y = 2").
inline MeshAttr parseMesh(mlir::MLIRContext &context, llvm::StringRef text) {
  auto mesh = llvm::dyn_cast_or_null<MeshAttr>(
      mlir::parseAttribute(("#tfm.mesh<" + text + ">").str(), &context));
  EXPECT_TRUE(mesh) << text.str();
  return mesh;
}

/// A sharding from its dimensions and pending axes.
inline Sharding makeSharding(std::initializer_list<std::initializer_list<llvm::StringRef>> dims,
                             std::initializer_list<llvm::StringRef> pending = {}) {
  Sharding s;
  for (auto d : dims)
    s.dims.push_back(Axes(d));
  s.pending = Axes(pending);
  return s;
}

/// How a sharding reads in test failures.
inline std::string describe(const Sharding &s) {
  std::string text = "[";
  for (auto [i, axes] : llvm::enumerate(s.dims))
    text += (i ? ", [" : "[") + llvm::join(axes, ", ") + "]";
  text += "]";
  if (!s.pending.empty())
    text += " pending [" + llvm::join(s.pending, ", ") + "]";
  if (s.hasParts()) {
    text += " parts [";
    for (auto [i, n] : llvm::enumerate(s.parts))
      text += (i ? ", " : "") + std::to_string(n);
    text += "]";
  }
  return text;
}

} // namespace pmlir::sharding::testing

#endif // PMLIR_UNITTESTS_SHARDING_SHARDINGTESTUTILS_H
