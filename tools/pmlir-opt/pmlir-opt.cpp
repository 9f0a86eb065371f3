//===- pmlir-opt.cpp - The pmlir optimizer driver -------------------------===//
//
// Part of pmlir.
//
// mlir-opt with the tfm dialect, the upstream dialects pmlir programs use, and
// every pmlir pass and pipeline. The output goes through pmlir::OutputFile: a
// failing run leaves no partial file and an existing file untouched, and a
// device such as /dev/null is written, never replaced.
//
//===----------------------------------------------------------------------===//

#include "pmlir/InitAllPMLIR.h"
#include "pmlir/Support/OutputFile.h"
#include "pmlir/Support/ToolMain.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/WithColor.h"

namespace {

int error(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "pmlir-opt") << message << "\n";
  return EXIT_FAILURE;
}

int optMain(int argc, char **argv) {
  mlir::DialectRegistry registry;
  pmlir::registerAllDialects(registry);
  pmlir::registerAllPasses();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "pmlir optimizer driver\n", registry);
  pmlir::printOpOnDiagnosticOnlyWhereAsked();

  // Text nested deeper than the stack holds is refused before parsing, and
  // bytecode is read once in a child process, where a crash or a hang of
  // the upstream reader on a corrupt file cannot take this process along.
  // The child writes what it read as text, which this process reads in
  // place of the bytecode (a corruption may damage only this process'
  // heap layout).
  std::string why;
  llvm::SmallString<128> text;
  if (llvm::sys::fs::createTemporaryFile("pmlir-opt-input", "mlir", text))
    return error("cannot create a temporary file for the input read as text");
  llvm::FileRemover removeText(text);
  if (!pmlir::checkModelInput(input, registry, /*trialRead=*/true, why, text.str().str()))
    return error(why);
  uint64_t textBytes = 0;
  if (!llvm::sys::fs::file_size(text, textBytes) && textBytes > 0)
    input = text.str().str();
  if (output == "-")
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, input, output, registry));

  // A device, FIFO or socket is written in place; a regular file (or a new
  // path, or a link's target) is written beside it and renamed over it.
  std::unique_ptr<pmlir::OutputFile> file = pmlir::OutputFile::open(output, why);
  if (!file)
    return error(why);
  // On failure MlirOptMain removes the file it was given (never a device:
  // LLVM removes only regular files).
  if (mlir::failed(mlir::MlirOptMain(argc, argv, input, file->writePath(), registry)))
    return EXIT_FAILURE;
  if (!file->commit(why))
    return error(why);
  return EXIT_SUCCESS;
}

} // namespace

int main(int argc, char **argv) {
  return pmlir::runToolMain("pmlir-opt", [&] { return optMain(argc, argv); });
}
