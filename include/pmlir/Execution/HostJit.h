//===- HostJit.h - An LLVM module compiled for this host --------*- C++ -*-===//
//
// Part of pmlir.
//
// The JIT that runs a lowered program on this host: LLVM's ORC (LLJIT on
// RuntimeDyld, as MLIR's ExecutionEngine), fed objects rather than IR so
// that an object can come from the ObjectCache. The module is optimized
// and compiled to an object only where the cache has none for it. The
// entry is called through a packed wrapper (`_mlir_` + its name: one
// argument, an array of pointers to the arguments and then to the result,
// as the ExecutionEngine's invokePacked); the module's constructors and
// destructors (a GPU program's modules loaded and unloaded) run when the
// object is loaded and when the HostJit is destroyed.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_HOSTJIT_H
#define PMLIR_EXECUTION_HOSTJIT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <utility>

namespace llvm {
class LLVMContext;
class Module;
namespace orc {
class LLJIT;
} // namespace orc
} // namespace llvm

namespace pmlir::exec {

class ObjectCache;

/// Makes every definition of `module` but those named `kept` internal and
/// erases the functions nothing then uses. A program calls only its
/// entry's packed wrapper; code generation of a function the optimizer
/// cannot drop costs as much as any other.
void internalizeAllBut(llvm::Module &module, llvm::ArrayRef<llvm::StringRef> kept);

class HostJit {
public:
  struct Options {
    /// LLVM's optimization level (0-3).
    unsigned optLevel = 2;
    /// Where objects are looked for and kept; null: compiled every time.
    const ObjectCache *cache = nullptr;
    /// Whether an object compiled here is kept there.
    bool keepCompiled = true;
  };
  /// Functions the program calls by name, at their addresses here.
  using Symbols = llvm::ArrayRef<std::pair<const char *, void *>>;

  ~HostJit();
  /// Compiles `module` (or loads its object) with `entry`'s packed wrapper,
  /// binds `symbols`, and runs its constructors.
  static llvm::Expected<std::unique_ptr<HostJit>> create(std::unique_ptr<llvm::Module> module,
                                                         std::unique_ptr<llvm::LLVMContext> context,
                                                         llvm::StringRef entry, Symbols symbols,
                                                         const Options &options);

  /// The entry's packed wrapper.
  void (*packedEntry() const)(void **) { return entry; }
  /// Whether the object came from the cache.
  bool fromCache() const { return cached; }
  /// What went wrong with the cache, if anything (the program compiled and
  /// loaded anyway): a caller says it once.
  const std::string &cacheWarning() const { return warning; }

private:
  HostJit() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  void (*entry)(void **) = nullptr;
  void (*fini)() = nullptr;
  bool cached = false;
  std::string warning;
};

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_HOSTJIT_H
