//===- Layout.h - Where a rank's block of a sharded tensor lies -*- C++ -*-===//
//
// Part of pmlir.
//
// The one layout decoder of sharded tensors. A dimension split over mesh
// axes (major first, sub-axes allowed) is cut into as many equal blocks as
// the axes have devices; a split the devices do not divide is padded as
// GSPMD pads uneven shards: every device holds ceil(global / devices)
// elements, device i those from i times that size on, and the last
// devices' blocks end in padding. The block a device holds is
// Mesh::blockIndex, the arithmetic the partitioner emits as IR. pmlir-run
// binds weights and assembles results with it. Pure logic: no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_LAYOUT_H
#define PMLIR_SUPPORT_LAYOUT_H

#include "pmlir/Support/Mesh.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pmlir {

/// The size of one shard of a dimension of `global` elements split over
/// `devices`.
inline int64_t shardSize(int64_t global, int64_t devices) {
  return (global + devices - 1) / devices;
}

/// The head-tail order of a sequence of `length` split in equal blocks over
/// `ranks` devices: context parallelism's balance of causal attention work
/// (Megatron-LM's and torchtitan's load balancing). Block r is a head chunk
/// from the front of the sequence, positions [r * head, (r + 1) * head),
/// then a tail chunk from its back, the last tail on rank 0: under a causal
/// mask a rank's early queries see few keys and its late ones many. A
/// program in this order computes on the sequence permuted so that rank
/// r's contiguous block is its two chunks; positions and masks map an index
/// back with position(). Blocks of an odd length have a head one longer
/// than the tail, so the order needs no padding.
struct HeadTailOrder {
  int64_t ranks = 1, length = 0;

  int64_t block() const { return length / ranks; }
  int64_t head() const { return (block() + 1) / 2; }
  int64_t tail() const { return block() - head(); }
  /// The sequence position of the element at `index` in head-tail order.
  int64_t position(int64_t index) const {
    int64_t rank = index / block(), within = index % block();
    if (within < head())
      return rank * head() + within;
    return ranks * head() + (ranks - 1 - rank) * tail() + within - head();
  }
  /// How many elements from `index` on have consecutive positions (to the
  /// end of its chunk).
  int64_t run(int64_t index) const {
    int64_t within = index % block();
    return within < head() ? head() - within : block() - within;
  }
};

/// Per tensor dimension, the mesh axes that split it, major first.
using DimAxes = std::vector<std::vector<std::string>>;

/// One device's block of a sharded tensor, row-major.
struct BlockLayout {
  std::vector<int64_t> shape; ///< the tensor's global shape
  /// The block in the view of the global tensor where a dimension of parts
  /// is two (the tensor's own dimensions where none has parts):
  std::vector<int64_t> global; ///< the view's global shape
  std::vector<int64_t> local;  ///< the block's shape (padding included)
  std::vector<int64_t> offset; ///< the block's first global element
  /// A dimension of the view in head-tail order: the block's elements
  /// along it are at the positions the order gives (the global tensor is
  /// in sequence order).
  std::optional<size_t> orderedDim;
  HeadTailOrder order;

  /// Decodes the block of the device at `coordinates` on `mesh` of a tensor
  /// split as `dims` whose blocks are `local`. `global` is the global shape
  /// where known (it says how much of the last blocks is padding), else
  /// `local` times the parts. `parts` gives, per dimension, the equal parts
  /// it is made of (empty: 1 each): each part is split as the dimension
  /// says and the block holds the device's block of every part, so the
  /// layout works on the view where such a dimension is two, [parts, the
  /// rest] (the same row-major order). `headTailDim`: the dimension whose
  /// blocks are in head-tail order (split over one axis alone, in equal
  /// blocks), if any. On failure sets `error` (a phrase that follows the
  /// tensor's name) and returns nullopt.
  static std::optional<BlockLayout>
  decode(const Mesh &mesh, const DimAxes &dims, const std::vector<int64_t> &local,
         const std::optional<std::vector<int64_t>> &global, const std::vector<int64_t> &coordinates,
         std::string &error, const std::vector<int64_t> &parts = {},
         std::optional<size_t> headTailDim = std::nullopt);

  /// Copies the block out of the global tensor `globalData` (elements of
  /// `width` bytes) into `block`, reading only the block. Padding in
  /// `block` is left as it is: callers that contract over it zero it first.
  void copyOut(const void *globalData, size_t width, void *block) const;
  /// The elements of the global tensor the block holds (its padding left
  /// out): what copyOut reads.
  int64_t elementsInside() const;
  /// Writes `block` into its place in `globalData`, padding left out.
  void pasteIn(const void *block, size_t width, void *globalData) const;

  /// Calls copyRow(global offset, block offset, elements) for each
  /// innermost row of the block, in elements, leaving out padding.
  template <typename CopyRow> void forEachRow(CopyRow copyRow) const;
};

template <typename CopyRow> void BlockLayout::forEachRow(CopyRow copyRow) const {
  size_t rank = local.size();
  if (rank == 0)
    return copyRow(0, 0, 1);
  int64_t elements = 1;
  for (int64_t n : local)
    elements *= n;
  std::vector<int64_t> index(rank, 0);
  int64_t row = local.back();
  int64_t inside = std::min(row, global.back() - offset.back());
  auto placeOf = [&](size_t d, int64_t i) { return orderedDim == d ? order.position(i) : i; };
  for (int64_t done = 0; done < elements; done += row) {
    int64_t at = 0;
    bool padding = inside <= 0;
    for (size_t d = 0; d < rank; ++d) {
      padding |= offset[d] + index[d] >= global[d];
      at = at * global[d] + (d + 1 < rank ? placeOf(d, offset[d] + index[d]) : 0);
    }
    if (!padding && orderedDim == rank - 1) {
      // A row of the ordered dimension: one copy per chunk.
      for (int64_t i = 0; i < inside;) {
        int64_t n = std::min(order.run(offset.back() + i), inside - i);
        copyRow(at + order.position(offset.back() + i), done + i, n);
        i += n;
      }
    } else if (!padding) {
      copyRow(at + offset.back(), done, inside);
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < local[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace pmlir

#endif // PMLIR_SUPPORT_LAYOUT_H
