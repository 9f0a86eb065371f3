//===- Layout.cpp - Where a rank's block of a sharded tensor lies ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/Layout.h"

#include <algorithm>
#include <cstring>

using namespace pmlir;

std::optional<BlockLayout> BlockLayout::decode(const Mesh &mesh, const DimAxes &dims,
                                               const std::vector<int64_t> &local,
                                               const std::optional<std::vector<int64_t>> &global,
                                               const std::vector<int64_t> &coordinates,
                                               std::string &error) {
  if (global && global->size() != local.size()) {
    error = "has a global shape of rank " + std::to_string(global->size()) + " for " +
            std::to_string(local.size()) + " dimensions";
    return std::nullopt;
  }
  if (dims.size() != local.size()) {
    error = "has " + std::to_string(dims.size()) + " entries in tfm.sharding for " +
            std::to_string(local.size()) + " dimensions";
    return std::nullopt;
  }
  BlockLayout layout;
  layout.local = local;
  for (size_t d = 0; d < local.size(); ++d) {
    int64_t parts = 1;
    for (const std::string &name : dims[d]) {
      std::optional<SubAxis> sub = mesh.subAxis(name);
      if (!sub) {
        error = "tfm.sharding names mesh axis '" + name + "', which --mesh does not have";
        return std::nullopt;
      }
      parts *= sub->size;
    }
    int64_t size = global ? (*global)[d] : local[d] * parts;
    if (shardSize(size, parts) != local[d]) {
      error = "has blocks of " + std::to_string(local[d]) + " in dimension " + std::to_string(d) +
              ", which is not " + std::to_string(size) + " split in " + std::to_string(parts);
      return std::nullopt;
    }
    layout.global.push_back(size);
    layout.offset.push_back(local[d] * mesh.blockIndex(dims[d], coordinates));
  }
  return layout;
}

void BlockLayout::copyOut(const void *globalData, size_t width, void *block) const {
  auto from = static_cast<const uint8_t *>(globalData);
  auto to = static_cast<uint8_t *>(block);
  forEachRow([&](int64_t at, int64_t into, int64_t n) {
    std::memcpy(to + into * width, from + at * width, n * width);
  });
}

void BlockLayout::pasteIn(const void *block, size_t width, void *globalData) const {
  auto from = static_cast<const uint8_t *>(block);
  auto to = static_cast<uint8_t *>(globalData);
  forEachRow([&](int64_t at, int64_t into, int64_t n) {
    std::memcpy(to + at * width, from + into * width, n * width);
  });
}
