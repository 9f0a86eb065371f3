//===- RunFlags.h - pmlir-run's flags, each bound to its field --*- C++ -*-===//
//
// Part of pmlir.
//
// Every flag of pmlir-run is declared once, here, bound to the RunOptions
// field it sets: typed (a choice among alternatives is an enum, its values
// named once), described, and in one of the categories --help lists. A
// flag's value that names no alternative is refused as
// "unknown --FLAG 'VALUE' (known: ...)" while parsing.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_RUNFLAGS_H
#define PMLIR_EXECUTION_RUNFLAGS_H

#include "pmlir/Execution/Runner.h"

#include "llvm/Support/CommandLine.h"

#include <memory>
#include <string>
#include <vector>

namespace pmlir::exec {

class RunFlags {
public:
  /// Declares the flags, bound to `options`' fields (their defaults are the
  /// fields' values). `tool` names the program in errors. Declare them
  /// after the libraries' options are registered (libLLVM declares a
  /// `threads` of its own, which this replaces) and before parsing.
  RunFlags(RunOptions &options, llvm::StringRef tool);
  ~RunFlags();

  /// Hides from --help every option outside pmlir-run's categories (the
  /// libraries' own), except MLIR's --mlir-* options (IR printing, timing),
  /// which --help lists under "Debugging". Hidden options still parse.
  void hideOtherOptions();

  /// After parsing: the values the parser cannot check alone (--betas,
  /// --threads, --jit-opt-level, --profile, --timeout, --tolerance) and the
  /// flags given where they would change nothing. Returns false with
  /// `error` set.
  bool finish(std::string &error);

private:
  /// Whether the flag `name` (without its dashes) was on the command line.
  bool given(llvm::StringRef name) const;

  RunOptions &options;
  std::vector<std::unique_ptr<llvm::cl::Option>> flags;
  /// --betas ("beta1,beta2") and whether --threads and --profile were
  /// given.
  std::string betas;
  llvm::cl::Option *threadsFlag = nullptr, *profileFlag = nullptr;
};

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_RUNFLAGS_H
