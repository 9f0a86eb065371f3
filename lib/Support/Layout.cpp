//===- Layout.cpp - Where a rank's block of a sharded tensor lies ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/Layout.h"

#include <algorithm>
#include <cstring>

using namespace pmlir;

std::optional<BlockLayout>
BlockLayout::decode(const Mesh &mesh, const DimAxes &dims, const std::vector<int64_t> &local,
                    const std::optional<std::vector<int64_t>> &global,
                    const std::vector<int64_t> &coordinates, std::string &error,
                    const std::vector<int64_t> &parts, std::optional<size_t> headTailDim) {
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
  if (!parts.empty() && parts.size() != local.size()) {
    error = "has " + std::to_string(parts.size()) + " part counts in tfm.sharding for " +
            std::to_string(local.size()) + " dimensions";
    return std::nullopt;
  }
  if (headTailDim && *headTailDim >= local.size()) {
    error = "has tfm.head_tail_dim " + std::to_string(*headTailDim) + " for " +
            std::to_string(local.size()) + " dimensions";
    return std::nullopt;
  }
  BlockLayout layout;
  for (size_t d = 0; d < local.size(); ++d) {
    int64_t devices = 1;
    for (const std::string &name : dims[d]) {
      std::optional<SubAxis> sub = mesh.subAxis(name);
      if (!sub) {
        error = "tfm.sharding names mesh axis '" + name + "', which --mesh does not have";
        return std::nullopt;
      }
      devices *= sub->size;
    }
    int64_t n = parts.empty() ? 1 : parts[d];
    std::string ofParts = n == 1 ? "" : " (" + std::to_string(n) + " parts)";
    if (n < 1 || local[d] % n != 0 || (global && (*global)[d] % n != 0)) {
      error = "has dimension " + std::to_string(d) + " of " + std::to_string(local[d]) +
              " elements here" +
              (global ? " and " + std::to_string((*global)[d]) + " in all" : std::string()) +
              ", which is not made of " + std::to_string(n) + " equal parts";
      return std::nullopt;
    }
    int64_t block = local[d] / n;
    int64_t size = global ? (*global)[d] / n : block * devices;
    if (shardSize(size, devices) != block) {
      error = "has blocks of " + std::to_string(local[d]) + " in dimension " + std::to_string(d) +
              ofParts + ", which is not " + std::to_string(size * n) + " split in " +
              std::to_string(devices) + (n == 1 ? "" : " in each part");
      return std::nullopt;
    }
    if (headTailDim == d) {
      int64_t length = size * n;
      if (dims[d].size() != 1 || n != 1 || length % devices != 0) {
        std::string axes;
        for (const std::string &name : dims[d])
          axes += (axes.empty() ? "'" : ", '") + name + "'";
        error = "has dimension " + std::to_string(d) + " of " + std::to_string(length) + ofParts +
                (axes.empty() ? " split over no axis" : " split over " + axes) +
                ": a sequence in head-tail order (tfm.head_tail_dim) is split over one axis "
                "alone, in equal blocks";
        return std::nullopt;
      }
      layout.orderedDim = layout.local.size();
      layout.order = HeadTailOrder{devices, length};
    }
    if (n != 1) {
      layout.global.push_back(n);
      layout.local.push_back(n);
      layout.offset.push_back(0);
    }
    layout.shape.push_back(size * n);
    layout.global.push_back(size);
    layout.local.push_back(block);
    layout.offset.push_back(block * mesh.blockIndex(dims[d], coordinates));
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

int64_t BlockLayout::elementsInside() const {
  int64_t inside = 0;
  forEachRow([&](int64_t, int64_t, int64_t n) { inside += n; });
  return inside;
}

void BlockLayout::pasteIn(const void *block, size_t width, void *globalData) const {
  auto from = static_cast<const uint8_t *>(block);
  auto to = static_cast<uint8_t *>(globalData);
  forEachRow([&](int64_t at, int64_t into, int64_t n) {
    std::memcpy(to + at * width, from + into * width, n * width);
  });
}
