//===- ToolMain.h - What every pmlir tool's main shares ----------*- C++ -*-===//
//
// Part of pmlir.
//
// MLIR's text parser, verifier and printer recurse once per nested region or
// attribute, so a deeply nested input overflows the main thread's 8 MiB
// stack. The tools therefore run on a thread with a large stack, refuse text
// nested past a limit that stack holds, and turn LLVM's fatal errors (a
// corrupt bytecode file makes the upstream reader ask for an impossible
// SmallVector) and failed allocations into a one-line error and exit 1
// instead of a stack dump. MLIR's bytecode reader can also corrupt the heap
// or loop on a corrupt file, which no handler catches, so a bytecode input
// is read once in a child process first. Header-only: for tools that link
// MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_TOOLMAIN_H
#define PMLIR_SUPPORT_TOOLMAIN_H

#include "pmlir/Support/Nesting.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/thread.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pmlir {

/// A diagnostic names its op's location; the op printed whole after it (a
/// model or a training step of thousands of lines) only where
/// --mlir-print-op-on-diagnostic asks. Where that option is registered and
/// not given, sets it to false (a context created after reads it). Returns
/// whether it was given.
inline bool printOpOnDiagnosticOnlyWhereAsked() {
  auto &registered = llvm::cl::getRegisteredOptions();
  auto printOp = registered.find("mlir-print-op-on-diagnostic");
  if (printOp == registered.end())
    return false;
  if (printOp->second->getNumOccurrences() > 0)
    return true;
  printOp->second->addOccurrence(0, printOp->first, "false");
  return false;
}

/// The stack of a tool's main thread: ample room for kMaxNesting levels of
/// MLIR text (parse, verify, passes and print recurse per level; 10,000
/// nested modules or scf regions through pmlir-opt peak under 100 MiB of
/// memory in all). Only what is used is backed by memory.
constexpr unsigned kToolStackBytes = 1u << 30;
constexpr size_t kMaxNesting = 10000;

/// Refuses MLIR text nested deeper than kMaxNesting; `what` names the input.
inline bool checkNesting(llvm::StringRef text, llvm::StringRef what, std::string &error) {
  if (text.size() >= 4 && text.starts_with("ML\xef\x52"))
    return true; // bytecode: bytecodeReadsSafely tries it in a child instead
  size_t depth = bracketDepth({text.data(), text.size()}, /*mlir=*/true);
  if (depth <= kMaxNesting)
    return true;
  error = (what + ": nesting " + llvm::Twine(depth) + " deep; at most " +
           llvm::Twine(kMaxNesting) + " levels of {}, [], () and <> are accepted")
              .str();
  return false;
}

/// The seconds a bytecode file of `bytes` may take to read in the trial
/// child: far more than the reader needs (it reads tens of MB a second).
inline unsigned bytecodeReadSeconds(size_t bytes) { return 10 + bytes / (1 << 20); }

/// Whether `path` is MLIR bytecode that reads without crashing or hanging:
/// a child process parses it with `registry` first (the upstream reader
/// crashes with heap corruption, or loops, on some one-byte corruptions).
/// Text and unreadable files pass (the real parse reports on them). On
/// failure `error` says what happened.
///
/// A corruption can also damage the heap in a way that only a process with
/// another heap layout trips over, so a clean trial read does not make the
/// caller's own read of the same bytes safe. With `asText`, a child that
/// read the file writes the module there as generic MLIR text with its
/// locations, for the caller to read instead of the bytecode; `asText` is
/// left empty where the file is not bytecode. A child that refuses the file
/// leaves its diagnostics there, and the first becomes `error`.
inline bool bytecodeReadsSafely(const std::string &path, const mlir::DialectRegistry &registry,
                                std::string &error, const std::string &asText = "") {
  char magic[4] = {};
  size_t bytes = 0;
  if (FILE *f = std::fopen(path.c_str(), "rb")) {
    size_t n = std::fread(magic, 1, 4, f);
    if (std::fseek(f, 0, SEEK_END) == 0)
      bytes = static_cast<size_t>(std::max(0L, std::ftell(f)));
    std::fclose(f);
    if (n != 4 || std::memcmp(magic, "ML\xefR", 4) != 0)
      return true;
  } else {
    return true;
  }
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0)
    return true; // no trial: read it as usual
  if (child == 0) {
    alarm(bytecodeReadSeconds(bytes));
    // Only the answer matters: no dumps; diagnostics go to `asText` for
    // the caller to report, else nowhere.
    int sink =
        asText.empty() ? ::open("/dev/null", O_WRONLY) : ::open(asText.c_str(), O_WRONLY | O_TRUNC);
    if (sink >= 0)
      dup2(sink, STDERR_FILENO);
    mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
    mlir::ParserConfig config(&context);
    auto module = mlir::parseSourceFile<mlir::ModuleOp>(path, config);
    if (module && !asText.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(asText, ec);
      if (ec)
        std::_Exit(1);
      module->print(os, mlir::OpPrintingFlags().enableDebugInfo().printGenericOpForm());
      os.close();
      std::_Exit(os.has_error() ? 1 : 0);
    }
    std::_Exit(module ? 0 : 1);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && !asText.empty() && WEXITSTATUS(status) != 0) {
    // Refused: the child's first diagnostic, and no read here (the same
    // bytes may crash this process' reader).
    auto diagnostics = llvm::MemoryBuffer::getFile(asText);
    llvm::StringRef first =
        diagnostics ? (*diagnostics)->getBuffer().split('\n').first : llvm::StringRef();
    size_t at = first.find("error: ");
    if (at != llvm::StringRef::npos)
      first = first.drop_front(at + 7);
    error = "'" + path + "': " + (first.empty() ? "the bytecode could not be read" : first.str());
    return false;
  }
  if (WIFEXITED(status))
    return true; // read, or refused with a diagnostic the real parse repeats
  int signal = WTERMSIG(status);
  error = signal == SIGALRM
              ? "'" + path + "': reading this bytecode did not finish in " +
                    std::to_string(bytecodeReadSeconds(bytes)) + " s; the file is corrupt"
              : "'" + path + "': the MLIR bytecode reader crashed on this file (" +
                    strsignal(signal) + "); the file is corrupt";
  return false;
}

/// Why `module`'s `shard.grid`s cannot be verified, or "": upstream's
/// collective verifiers divide by a grid's axis sizes, so a grid with an
/// axis of size 0 must be refused before the module is verified.
inline std::string unverifiableGrid(mlir::ModuleOp module) {
  std::string why;
  module.walk([&](mlir::shard::GridOp grid) {
    if (llvm::is_contained(grid.getShape(), int64_t(0)))
      why = "shard.grid @" + grid.getSymName().str() +
            " has an axis of size 0; every axis of a grid holds at least one device";
    return why.empty() ? mlir::WalkResult::advance() : mlir::WalkResult::interrupt();
  });
  return why;
}

/// unverifiableGrid() of the text `text`, parsed without verification;
/// "" where it has no grid or does not parse (the real read reports that).
inline std::string unverifiableGridIn(llvm::StringRef text, const mlir::DialectRegistry &registry) {
  if (!text.contains("shard.grid"))
    return "";
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::ParserConfig config(&context, /*verifyAfterParse=*/false);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, config);
  return module ? unverifiableGrid(*module) : "";
}

/// What the tools check of a model file before MLIR reads it: the nesting
/// of text, that its grids can be verified, and with `trialRead` a trial
/// read of bytecode in a child (not in an MPI rank, which must not fork).
/// A directory, a pipe, a FIFO or a device is refused (the file is read
/// twice); standard input ("-") and unreadable files pass: the real read
/// reports on them. With `asText` (and
/// `trialRead`), bytecode that reads is also written there as text for the
/// caller to read instead (see bytecodeReadsSafely).
inline bool checkModelInput(const std::string &path, const mlir::DialectRegistry &registry,
                            bool trialRead, std::string &error, const std::string &asText = "") {
  if (path == "-")
    return true;
  // A pipe or a FIFO would be read up here, and the real read would find
  // it empty or wait for a writer that is gone; a directory is no model.
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status)) {
    if (status.type() == llvm::sys::fs::file_type::directory_file) {
      error = "'" + path + "' is a directory, not a model file";
      return false;
    }
    if (status.type() != llvm::sys::fs::file_type::regular_file) {
      error = "'" + path +
              "' is not a regular file (a pipe, a FIFO or a device): the model is read more "
              "than once (checked, then parsed); write it to a file";
      return false;
    }
  }
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (buffer && !checkNesting((*buffer)->getBuffer(), path, error))
    return false;
  if (buffer) {
    std::string grid = unverifiableGridIn((*buffer)->getBuffer(), registry);
    if (!grid.empty()) {
      error = "'" + path + "': " + grid;
      return false;
    }
  }
  return !trialRead || bytecodeReadsSafely(path, registry, error, asText);
}

namespace detail {
inline const char *&toolName() {
  static const char *name = "pmlir";
  return name;
}
[[noreturn]] inline void endOnFatalError(void *, const char *reason, bool) {
  // Sizes a reader took from a corrupt file end here as impossible ones.
  llvm::StringRef text(reason);
  bool size = text.contains("SmallVector") || text.contains("out of memory") ||
              text.contains("Allocation failed");
  std::fprintf(stderr, "%s: error: %s%s\n", toolName(), reason,
               size ? " (a corrupt or oversized input?)" : "");
  std::fflush(stderr);
  // Remove the files registered for removal (a half-written output).
  llvm::sys::RunInterruptHandlers();
  std::_Exit(1);
}
} // namespace detail

/// Runs `body` (the tool's main) on a thread with kToolStackBytes of stack,
/// LLVM's fatal and allocation errors ending the process with exit 1 and a
/// message from `tool`. Returns body's exit code.
inline int runToolMain(const char *tool, const std::function<int()> &body) {
  detail::toolName() = tool;
  llvm::install_fatal_error_handler(
      [](void *data, const char *reason, bool crash) { detail::endOnFatalError(data, reason, crash); });
  llvm::install_bad_alloc_error_handler(
      [](void *data, const char *reason, bool crash) { detail::endOnFatalError(data, reason, crash); });
  int code = 1;
  llvm::thread worker(std::optional<unsigned>(kToolStackBytes), [&] { code = body(); });
  worker.join();
  return code;
}

} // namespace pmlir

#endif // PMLIR_SUPPORT_TOOLMAIN_H
