//===- TokenData.cpp - Training windows from a flat file of token ids -----===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/TokenData.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace pmlir::exec;

TokenData::~TokenData() = default;

std::unique_ptr<TokenData> TokenData::open(const std::string &path, TokenDtype dtype, int64_t seq,
                                           std::string &error) {
  // The ids are mapped, not read in: a pipe or a device would be read
  // whole into memory (or waited on, a FIFO without a writer).
  llvm::sys::fs::file_status status;
  if (!llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file) {
    error = "--data '" + path +
            "' is not a regular file (a pipe, a FIFO, a device or a directory): the token ids "
            "are mapped from a file; write them to one";
    return nullptr;
  }
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot open --data '" + path + "': " + buffer.getError().message();
    return nullptr;
  }
  std::unique_ptr<TokenData> data(new TokenData());
  data->wideIds = dtype == TokenDtype::Int32;
  size_t width = data->wideIds ? 4 : 2;
  size_t bytes = (*buffer)->getBufferSize();
  if (bytes % width != 0) {
    error = "--data '" + path + "' holds " + std::to_string(bytes) + " bytes, no whole number of " +
            (data->wideIds ? "int32" : "uint16") + " token ids";
    return nullptr;
  }
  data->buffer = std::move(*buffer);
  data->count = static_cast<int64_t>(bytes / width);
  data->seq = seq;
  if (data->count < seq + 1) {
    error = "--data '" + path + "' holds " + std::to_string(data->count) +
            " tokens, fewer than one window of seq + 1 = " + std::to_string(seq + 1);
    return nullptr;
  }
  return data;
}

int64_t TokenData::token(int64_t i) const {
  const char *bytes = buffer->getBufferStart();
  if (wideIds) {
    int32_t v;
    std::memcpy(&v, bytes + 4 * i, 4);
    return v;
  }
  uint16_t v;
  std::memcpy(&v, bytes + 2 * i, 2);
  return v;
}

std::optional<int64_t> TokenData::firstOutside(int64_t first, int64_t count, int64_t vocab,
                                               int64_t &at, int64_t &ordinal) const {
  for (int64_t k = 0; k < std::min(count, windows()); ++k) {
    int64_t start = ((first + k) % windows()) * seq;
    for (int64_t s = 0; s <= seq; ++s)
      if (int64_t v = token(start + s); v < 0 || v >= vocab) {
        at = start + s;
        ordinal = k;
        return v;
      }
  }
  return std::nullopt;
}

void TokenData::fill(int64_t first, int64_t rows, bool wide, void *ids, void *labels) const {
  auto store = [&](void *to, int64_t k, int64_t v) {
    if (wide)
      static_cast<int64_t *>(to)[k] = v;
    else
      static_cast<int32_t *>(to)[k] = static_cast<int32_t>(v);
  };
  for (int64_t r = 0; r < rows; ++r) {
    int64_t start = ((first + r) % windows()) * seq;
    for (int64_t s = 0; s <= seq; ++s) {
      int64_t v = token(start + s);
      if (s < seq)
        store(ids, r * seq + s, v);
      if (s > 0)
        store(labels, r * seq + s - 1, v);
    }
  }
}
