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
// instead of a stack dump. Header-only: for tools that link LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_TOOLMAIN_H
#define PMLIR_SUPPORT_TOOLMAIN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/thread.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace pmlir {

/// The stack of a tool's main thread: ample room for kMaxNesting levels of
/// MLIR text (parse, verify, passes and print recurse per level; 10,000
/// nested modules or scf regions through pmlir-opt peak under 100 MiB of
/// memory in all). Only what is used is backed by memory.
constexpr unsigned kToolStackBytes = 1u << 30;
constexpr size_t kMaxNesting = 10000;

/// The deepest nesting of {}, [], () and <> in MLIR text, outside string
/// literals and // comments ("->" is no closing bracket).
inline size_t nestingDepth(llvm::StringRef text) {
  size_t depth = 0, deepest = 0;
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < n && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n')
        ++i;
    } else if (c == '{' || c == '[' || c == '(' || c == '<') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == '}' || c == ']' || c == ')' || (c == '>' && (i == 0 || text[i - 1] != '-'))) &&
               depth > 0) {
      --depth;
    }
  }
  return deepest;
}

/// Refuses MLIR text nested deeper than kMaxNesting; `what` names the input.
inline bool checkNesting(llvm::StringRef text, llvm::StringRef what, std::string &error) {
  if (text.size() >= 4 && text.starts_with("ML\xef\x52"))
    return true; // bytecode: its reader is guarded by the stack size alone
  size_t depth = nestingDepth(text);
  if (depth <= kMaxNesting)
    return true;
  error = (what + ": nesting " + llvm::Twine(depth) + " deep; at most " +
           llvm::Twine(kMaxNesting) + " levels of {}, [], () and <> are accepted")
              .str();
  return false;
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
