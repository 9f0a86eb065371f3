/*===- CpuKernels.h - BLAS-backed kernels for JIT-compiled code -*- C -*-===*\
|*                                                                          *|
|* Part of pmlir.                                                           *|
|*                                                                          *|
|* The kernels that pmlir-linalg-to-library-calls calls. They take memref   *|
|* descriptors (the `llvm.emit_c_interface` convention) and never link      *|
|* MLIR.                                                                    *|
\*===----------------------------------------------------------------------===*/

#ifndef PMLIR_RUNTIME_CPUKERNELS_H
#define PMLIR_RUNTIME_CPUKERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One kernel: the symbol the JIT looks up and its address. */
typedef struct {
  const char *name;
  void *address;
} pmlir_rt_symbol;

/* The kernels, terminated by an entry whose name is null. */
const pmlir_rt_symbol *pmlir_rt_cpu_kernel_symbols(void);

/* Threads of the GEMMs (OpenBLAS) and of the loops around them
 * (pmlir_rt_parallel_for); n <= 0: pmlir_rt_default_threads(). */
void pmlir_rt_set_num_threads(int n);

/* Rounds `count` f32 values to bf16 (their bits; to nearest, ties to even,
 * as the compiled arith.truncf does) over the runtime's threads: the bf16
 * forms of arguments a caller makes (pmlir/Conversion/RoundedArguments.h). */
void pmlir_rt_round_to_bf16(const float *from, uint16_t *to, int64_t count);

/* Widens `count` bf16 values (their bits) to f32 over the runtime's
 * threads: the f32 copies of kept GEMM operands (pmlir::rt::
 * keepBf16GemmOperand). */
void pmlir_rt_widen_bf16(const uint16_t *from, float *to, int64_t count);

#ifdef __cplusplus
}
#endif

#endif /* PMLIR_RUNTIME_CPUKERNELS_H */
