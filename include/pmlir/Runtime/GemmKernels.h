//===- GemmKernels.h - The CPU GEMM kernels, chosen by the CPU's features -===//
//
// Part of pmlir.
//
// The CPU's GEMMs run on OpenBLAS, whose dynamic build picks its kernels
// from a list of CPU models when it loads: a model newer than its list gets
// the generic SSE3 kernels ("Prescott"), a quarter of what an AVX-512 CPU
// does. pmlir chooses by the CPU's features instead (cpuid, and the
// registers the OS saves): where OpenBLAS's pick is below what the CPU
// runs, pmlir-run starts itself again with OPENBLAS_CORETYPE naming the
// kernels for the CPU's level, before anything else happens (OpenBLAS reads
// it when it loads, which is before main). An OPENBLAS_CORETYPE the user
// set is left alone. Ranks under mpirun on this host inherit the choice;
// ranks on other hosts make their own.
//
// On a CPU with AVX-512 the f32 GEMMs run on oneDNN's SGEMM instead: it
// was faster than OpenBLAS's AVX-512 kernels on both CPUs measured, an
// Intel Xeon with AMX (two 512-bit FMA units a core, where OpenBLAS 0.3.21
// reaches two thirds of the peak) and an AMD EPYC of Zen 4 (one 512-bit
// FMA a cycle; docs/performance.md). GEMMs on bf16 operands run on oneDNN's
// bf16 GEMM (vdpbf16ps or AMX, f32 sums) where the CPU has AVX-512 BF16 and
// runs it faster than the f32 GEMM (bf16Gemm); elsewhere their operands are
// widened to f32 for the f32 GEMM. oneDNN's GEMMs
// run on the runtime's threads, not on oneDNN's OpenMP threads. oneDNN
// (libdnnl.so.2, 40 MB) is loaded at its first use, not linked: an f32 run
// on another CPU never maps it (unless --verbose asks which bf16 path this
// CPU takes), and a machine without it (the GPU bundle's) takes OpenBLAS's
// path. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_RUNTIME_GEMMKERNELS_H
#define PMLIR_RUNTIME_GEMMKERNELS_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pmlir::rt {

/// The vector instructions a set of GEMM kernels uses, or a CPU runs, in
/// increasing order.
enum class SimdLevel { Sse, Avx, Avx2, Avx512, Avx512Bf16 };

/// "SSE", "AVX", "AVX2", "AVX-512", "AVX-512 BF16".
const char *simdLevelName(SimdLevel level);

/// This CPU's level: its cpuid features and the vector registers the OS
/// saves (xgetbv); AVX2 counts with FMA, AVX-512 with F, DQ, BW and VL.
SimdLevel cpuSimdLevel();
/// Whether cpuid lists AMX (AMX-TILE). pmlir never runs AMX instructions
/// itself: AMX marks the CPUs where oneDNN's bf16 matmul primitive runs
/// its measured AMX kernels (oneDnnBf16UsesMatmul).
bool cpuHasAmx();

/// The level of the kernels of OpenBLAS's core `core` (as
/// openblas_get_corename() spells it, any case); nullopt for a core this
/// list does not know (then pmlir never overrides it).
std::optional<SimdLevel> openBlasCoreLevel(std::string_view core);

/// The OpenBLAS core whose kernels a CPU of level `cpu` should run where
/// OpenBLAS chose `chosen`: nullopt where `chosen` is as good (or unknown).
std::optional<std::string> betterOpenBlasCore(std::string_view chosen, SimdLevel cpu);

/// Called first thing in main with main's argv: where OpenBLAS chose
/// kernels below this CPU's level and OPENBLAS_CORETYPE is not set,
/// re-executes the program with it set (and PMLIR_OPENBLAS_CHOSE holding
/// OpenBLAS's own pick, for gemmPath). Returns when nothing is to be done
/// or the re-execution failed (OpenBLAS's pick then stays). The
/// environment variable PMLIR_TEST_OPENBLAS_CORE stands for OpenBLAS's
/// pick in tests (a CPU OpenBLAS does not know, on any machine).
void chooseGemmKernels(char **argv);

/// How this process multiplies bf16 operands.
enum class Bf16Gemm {
  /// Widened to f32 and multiplied by the f32 GEMM (f32Gemm()).
  Widened,
  /// oneDNN's bf16 GEMM, on the CPU's AVX-512 BF16 instructions.
  OneDnn,
};

/// One core's rates, in GFLOP/s, of 512-bit f32 FMAs (vfmadd231ps, 32
/// FLOPs) and bf16 dot products (vdpbf16ps, 64 FLOPs: two products and
/// their sums a lane), each measured on twelve independent chains for
/// about a tenth of a millisecond, the best of three. A CPU with AVX-512
/// BF16 need not run the dot products faster: an AMD EPYC of Zen 4 runs
/// them at twice its FMAs' FLOPs, an Intel Xeon of Emerald Rapids (whose
/// AMX the hypervisor hid) at half.
struct Bf16DotRates {
  double bf16Gflops = 0, f32Gflops = 0;
};
/// This CPU's, measured at the first call (about a millisecond); zero on
/// a CPU without AVX-512 BF16.
const Bf16DotRates &bf16DotRates();

/// The bf16 GEMM for this process: oneDNN's where the CPU has AVX-512 BF16
/// and libdnnl.so.2 loads, and either AMX (oneDNN's bf16 kernels then run
/// on its tiles) or bf16 dot products at least as fast as its f32 FMAs
/// (bf16DotRates): elsewhere oneDNN's bf16 kernels run at the dot
/// products' rate, slower than the f32 GEMM on the widened operands. The
/// environment variable PMLIR_TEST_BF16_GEMM_WIDENED asks for the widened
/// path and PMLIR_TEST_BF16_GEMM_ONEDNN (or
/// PMLIR_TEST_BF16_MATMUL_WITHOUT_AMX) for oneDNN's on any CPU with AVX-512
/// BF16 (benchmarks and tests compare the two with them). The first call
/// loads oneDNN where it may be used.
Bf16Gemm bf16Gemm();

/// Whether oneDnnBf16Gemm runs an m x n x k GEMM on oneDNN's matmul
/// primitive rather than its GEMM API: on a CPU with AMX, for an output of
/// 2^24 elements or more or with a dimension of 2^15 or more (a
/// vocabulary's), where the API runs at a half to two thirds of the
/// primitive's rate, not accumulating.
bool oneDnnBf16UsesMatmul(int64_t m, int64_t n, int64_t k, bool accumulate);

/// C = A B (+ C with `accumulate`) of row-major bf16 (bits) A and B into
/// f32 C, with A m x k (k x m with `transA`), B k x n (n x k with
/// `transB`) and the rows' strides lda, ldb, ldc, on oneDNN's bf16 GEMM
/// (its matmul primitive where oneDnnBf16UsesMatmul, or where B lies in an
/// operand keepBf16GemmOperand kept and C is not accumulated). Only where
/// bf16Gemm() is OneDnn. False where oneDNN reports a failure.
bool oneDnnBf16Gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                    int64_t lda, const uint16_t *b, int64_t ldb, float *c, int64_t ldc,
                    bool accumulate);
/// Whether oneDnnBf16Gemm runs these operands (B k x n, n x k with
/// `transB`, rows ldb apart) on the matmul primitive: by
/// oneDnnBf16UsesMatmul, or B inside an operand keepBf16GemmOperand kept,
/// not accumulating. Then oneDnnBf16GemmToBf16 may write a bf16 C.
bool oneDnnBf16RunsMatmul(bool transB, int64_t m, int64_t n, int64_t k, const uint16_t *b,
                          int64_t ldb, bool accumulate);
/// As oneDnnBf16Gemm, not accumulating, into bf16 C (bits): the primitive
/// rounds each f32 sum to nearest even as it writes it (as floatToBf16
/// does), so no f32 C is written and read again. Only where
/// oneDnnBf16RunsMatmul. False where oneDNN reports a failure.
bool oneDnnBf16GemmToBf16(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                          const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
                          uint16_t *c, int64_t ldc);

/// How oneDnnBf16BatchedGemm went.
enum class BatchedGemm { Ran, NotRun, Failed };
/// C[i] = A[i] B[i] for every index i of a batch of bf16 GEMMs (attention's
/// heads), not accumulating, in few calls of oneDNN's matmul primitive
/// instead of one GEMM call each: the batch split over the runtime's
/// threads along its first dimension of more than one element, each part
/// one call. `batch` holds the batch's `batchRank` sizes; each operand's
/// strides, its batch dimensions' in the same order, then those of its
/// rows and columns as the GEMM reads it (A m x k, B k x n, C m x n: an
/// operand stored transposed is read by its strides). NotRun, with
/// nothing written, on a CPU without AMX, with
/// PMLIR_TEST_BF16_BATCH_PER_GEMM set, or where oneDNN has no brgemm
/// kernel for these operands: the caller runs each GEMM. Failed where
/// oneDNN reports a failure.
BatchedGemm oneDnnBf16BatchedGemm(int batchRank, const int64_t *batch, int64_t m, int64_t n,
                                  int64_t k, const uint16_t *a, const int64_t *aStrides,
                                  const uint16_t *b, const int64_t *bStrides, float *c,
                                  const int64_t *cStrides);
BatchedGemm oneDnnBf16BatchedGemm(int batchRank, const int64_t *batch, int64_t m, int64_t n,
                                  int64_t k, const uint16_t *a, const int64_t *aStrides,
                                  const uint16_t *b, const int64_t *bStrides, uint16_t *c,
                                  const int64_t *cStrides);

/// Keeps `elements` bf16 values at `data` as an operand GEMMs will read
/// unchanged again and again (a program's bf16 weights, which
/// JitProgram::bind makes once), as keptBf16Operands() says:
/// - Packed: where oneDnnBf16UsesMatmul's primitive is used, a GEMM whose
///   B lies inside a kept operand runs on it, with that B reordered into
///   the primitive's blocked layout at its first GEMM and the copy read by
///   every later one: oneDNN's GEMM API and the primitive on a plain B pack
///   it again in every call, which at a forward's few rows takes as long as
///   a large part of the products (docs/performance.md). The copies take
///   about the operand's bytes again.
/// - Widened: the operand is widened to f32 here, once, and a widened GEMM
///   reading an operand inside it reads that copy instead of widening its
///   own in every call (at a forward of one 128-token sequence, the
///   widenings took as long as the f32 forward's GEMMs). The copy takes
///   twice the operand's bytes; where they cannot be had nothing is kept
///   and GEMMs widen as before.
/// Nothing is kept where the environment variable
/// PMLIR_TEST_BF16_WEIGHTS_UNPACKED is set (benchmarks and tests compare
/// with it).
void keepBf16GemmOperand(const uint16_t *data, int64_t elements);
/// Forgets the operand kept at `data`, and frees its packed or widened
/// copies: before it is written or freed, while no GEMM runs. No effect
/// where nothing is kept there.
void forgetBf16GemmOperand(const uint16_t *data);
/// The packed or widened copies the kept operands hold now (tests count
/// them).
int64_t keptBf16GemmCopies();
/// The f32 copy of the `span` elements from `first` where they lie inside
/// an operand keepBf16GemmOperand widened, else null. Valid until that
/// operand is forgotten.
const float *widenedBf16GemmOperand(const uint16_t *first, int64_t span);

/// What keepBf16GemmOperand makes of the operands it keeps on this CPU.
enum class KeptBf16Operands {
  /// Nothing: oneDNN's bf16 GEMM without its matmul primitive (no AMX), or
  /// PMLIR_TEST_BF16_WEIGHTS_UNPACKED set.
  None,
  /// Copies in the matmul primitive's layout, made at the first GEMM that
  /// reads each (bf16Gemm() is OneDnn with AMX): about the operand's bytes.
  Packed,
  /// One f32 copy each, made when kept (bf16Gemm() is Widened): twice the
  /// operand's bytes.
  Widened,
};
/// Loads oneDNN where the bf16 GEMM may use it.
KeptBf16Operands keptBf16Operands();

/// The blocks of pages oneDNN's GEMM scratch has taken in this process
/// (OneDnnScratch.cpp: each allocation of 64 KiB or more oneDNN makes gets
/// pages of its own, kept for its next, outside the heap the program's
/// buffers reuse); -1 in a build with AddressSanitizer, where the scratch
/// stays in the heap.
int64_t oneDnnScratchBlocks();

/// How this process multiplies f32 operands.
enum class F32Gemm {
  /// OpenBLAS's SGEMM (the kernels chooseGemmKernels asked for), on
  /// OpenBLAS's threads.
  OpenBlas,
  /// oneDNN's SGEMM on the runtime's threads.
  OneDnn,
};
/// The f32 GEMM for this process: oneDNN's on a CPU with AVX-512 where
/// libdnnl.so.2 loads, else OpenBLAS's. The environment variable
/// PMLIR_TEST_F32_GEMM_OPENBLAS asks for OpenBLAS (benchmarks compare the
/// two with it). The first call loads oneDNN where it may be used.
F32Gemm f32Gemm();
/// C = A B (+ C with `accumulate`) of row-major f32 A, B and C, as
/// oneDnnBf16Gemm; only where f32Gemm() is OneDnn. False where oneDNN
/// reports a failure.
bool oneDnnF32Gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const float *a,
                   int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
                   bool accumulate);
/// Whether oneDNN's GEMMs can be called here: libdnnl.so.2 loads (now, at
/// the first call) with the functions pmlir calls.
bool oneDnnLoads();
/// Makes this process what its first GEMMs make it: loads the GEMM
/// library chosen for each precision and, on oneDNN, runs one small GEMM
/// of each, whose kernels and buffers stay for the process's life. For
/// --predict, whose measure of the process before the run must hold them.
void prepareGemmKernels();
/// The threads of the GEMMs: OpenBLAS's, and the parts a oneDNN GEMM is
/// split into over the runtime's threads (pmlir_rt_parallel_for), one
/// single-threaded oneDNN call a part. oneDNN's own OpenMP threads are never
/// used: beside the runtime's they left a two-thread training step slower
/// than OpenBLAS's (docs/performance.md), where the split, one set of
/// threads for the loops and the GEMMs, makes it faster.
void setGemmThreads(int threads);
/// Whether the environment variable `name` holds a choice chooseGemmKernels
/// made for this CPU, which a process on another host makes for its own.
bool isThisCpusGemmChoice(std::string_view name);

/// The GEMM path of this process, for people: the library and version,
/// the kernels and who chose them, the threads. E.g. "OpenBLAS 0.3.21,
/// Cooperlake kernels (pmlir's choice for this CPU's AVX-512 BF16;
/// OpenBLAS chose Prescott), 2 threads".
std::string gemmPath();
/// The f32 GEMM's library for a cache key: "oneDNN 2.6.3" or "OpenBLAS
/// Cooperlake kernels".
std::string f32GemmName();

} // namespace pmlir::rt

#endif // PMLIR_RUNTIME_GEMMKERNELS_H
