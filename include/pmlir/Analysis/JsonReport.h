//===- JsonReport.h - The reports' shared pieces ------------------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_ANALYSIS_JSONREPORT_H
#define PMLIR_ANALYSIS_JSONREPORT_H

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Support/OutputFile.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace pmlir {

/// `text` as a JSON string: a name from the input (a symbol, a file's
/// path in a location) may hold any bytes, and JSON holds only UTF-8, so
/// bytes that are not UTF-8 become U+FFFD.
inline std::string jsonText(llvm::StringRef text) {
  return llvm::json::isUTF8(text) ? text.str() : llvm::json::fixUTF8(text);
}

/// The module's tfm.mesh as {"axis": size, ...} ({} without one).
inline llvm::json::Object meshJson(mlir::ModuleOp module) {
  llvm::json::Object mesh;
  if (auto attr = module->getAttrOfType<tfm::MeshAttr>(tfm::kMeshAttr))
    for (auto [name, size] : llvm::zip(attr.getAxes(), attr.getSizes()))
      mesh[jsonText(name.getValue())] = size;
  return mesh;
}

/// Writes `report` to `path` (- for stdout) whole or not at all, without
/// replacing a device, a link or the file `module` was read from
/// (OutputFile); an error on `module` names `what`.
inline mlir::LogicalResult writeJsonReport(mlir::ModuleOp module, llvm::StringRef path,
                                           llvm::StringRef what, const llvm::json::Value &report) {
  std::string text = llvm::formatv("{0:2}", report).str() + "\n";
  std::string error;
  // The model's own file, which a report would replace.
  if (auto file = module.getLoc()->findInstanceOf<mlir::FileLineColLoc>();
      file && path != "-" && sameFile(path.str(), file.getFilename().str())) {
    mlir::emitError(module.getLoc())
        << "cannot write the " << what << " to '" << path
        << "': it is the model's own file, which the report would replace";
    return mlir::failure();
  }
  if (!writeOutputFile(path.str(), text, error)) {
    mlir::emitError(module.getLoc())
        << "cannot write the " << what << " to '" << path << "': " << error;
    return mlir::failure();
  }
  return mlir::success();
}

} // namespace pmlir

#endif // PMLIR_ANALYSIS_JSONREPORT_H
