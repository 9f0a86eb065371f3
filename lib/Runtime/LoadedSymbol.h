//===- LoadedSymbol.h - A function of a library loaded at run time -*- C++ -*-===//
//
// Part of pmlir.
//
// The runtime loads the libraries a process may not need with dlopen
// (oneDNN at its first GEMM, cuBLASLt when a GPU run starts) and takes
// their functions by name, each into a pointer of the function's own type.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_RUNTIME_LOADEDSYMBOL_H
#define PMLIR_LIB_RUNTIME_LOADEDSYMBOL_H

#include <dlfcn.h>

namespace pmlir::rt {

/// Sets `function` to `name` in the library `handle` (dlopen's), or to null
/// where the library has no such symbol; returns whether it has one.
template <typename Function> bool loadSymbol(void *handle, Function &function, const char *name) {
  function = reinterpret_cast<Function>(dlsym(handle, name));
  return function != nullptr;
}

} // namespace pmlir::rt

#endif // PMLIR_LIB_RUNTIME_LOADEDSYMBOL_H
