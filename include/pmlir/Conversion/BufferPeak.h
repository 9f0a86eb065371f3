//===- BufferPeak.h - The bytes a bufferized program holds at its heaviest point -*- C++ -*-===//
//
// Part of pmlir.
//
// After bufferization every buffer of a program is a memref.alloc freed by a
// memref.dealloc after its last use (pmlir-dealloc-after-last-use), and all
// shapes are static: the bytes live at each point of a run are known before
// it. This walks the entry in program order, into the functions it calls
// (a call holds the callee's own peak on top of the caller's live buffers,
// and leaves the buffers it returns), and finds the heaviest point: what a
// rank's process allocates above its arguments, and which buffers make it.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_CONVERSION_BUFFERPEAK_H
#define PMLIR_CONVERSION_BUFFERPEAK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pmlir {

/// Where a buffer live at the heaviest point comes from, as the entry sees
/// it: returned by a forward transformer block (the activations kept for
/// the backward pass, and the block's output), returned by a backward block
/// (its parameters' gradients and the gradient it passes down), allocated by
/// the entry itself or a function that is no block (embeddings, the loss,
/// the optimizer's temporaries, pipeline transfers), or inside the call that
/// runs at the heaviest point (the temporaries of one block).
enum class BufferSource { ForwardLayers, BackwardLayers, Entry, InCall };
inline constexpr size_t kNumBufferSources = 4;

/// The name of `source` in reports ("forward_layers", ...).
llvm::StringRef bufferSourceName(BufferSource source);

struct BufferPeak {
  /// The bytes of the buffers live at once at the heaviest point of one
  /// call of the entry (its arguments not counted).
  int64_t peakBytes = 0;
  /// Those bytes by BufferSource.
  std::array<int64_t, kNumBufferSources> bytesBySource{};
  /// The bytes of the buffers the entry returns, live after it.
  int64_t resultBytes = 0;
  /// The op at the heaviest point, in its calls: "@train_step: call
  /// @train_step_layer_0 (loc) > linalg.matmul (loc)".
  std::string at;
  /// The bytes of every buffer live there, largest first (a buffer kept
  /// by each iteration of a loop counted once per iteration).
  std::vector<int64_t> liveBytes;
  /// The largest buffers live there, largest first.
  struct Buffer {
    int64_t bytes = 0;
    std::string type;
    std::string location;
  };
  std::vector<Buffer> largest;

  /// As a module attribute (tfm.buffer_peak) and back.
  mlir::DictionaryAttr toAttribute(mlir::MLIRContext *context) const;
  static std::optional<BufferPeak> fromAttribute(mlir::DictionaryAttr attr);
};

/// "file:line:col" of the source `location` comes from (or MLIR's form of
/// it where it has no file position): how --predict's reports name a place.
std::string sourcePosition(mlir::Location location);

/// The heaviest point of `entry` of a bufferized module, or nullopt with
/// `error` set: a buffer of dynamic shape, recursion, or a loop that keeps
/// buffers over an unknown number of iterations.
std::optional<BufferPeak> measureBufferPeak(mlir::func::FuncOp entry, std::string &error);

/// Module attribute that pmlir-buffer-peak writes: the BufferPeak of the
/// entry, or {error = "..."} where it has none.
inline constexpr llvm::StringLiteral kBufferPeakAttr = "tfm.buffer_peak";

/// Function attribute that pmlir-outline-layers puts on the function of a
/// backward transformer block.
inline constexpr llvm::StringLiteral kBackwardLayerAttr = "tfm.backward_layer";
/// And on the function of a forward one.
inline constexpr llvm::StringLiteral kForwardLayerAttr = "tfm.forward_layer";

} // namespace pmlir

#endif // PMLIR_CONVERSION_BUFFERPEAK_H
