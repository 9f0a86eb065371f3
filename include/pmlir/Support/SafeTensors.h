//===- SafeTensors.h - Memory-mapped safetensors files ------------*- C++ -*-===//
//
// Part of pmlir.
//
// Reads and writes the safetensors format (an 8-byte little-endian header
// length, a JSON header mapping tensor names to dtype, shape and byte range,
// then the raw data). Files are memory-mapped, so a tensor's bytes are read in
// place and a checkpoint is never copied whole. This library does not link
// MLIR: the per-rank runtime uses it to read each rank's own slices.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_SAFETENSORS_H
#define PMLIR_SUPPORT_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pmlir {

class OutputFile;

enum class DType : uint8_t { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };

/// The safetensors spelling ("F32", "BF16", ...).
const char *dtypeName(DType dtype);
std::optional<DType> parseDType(std::string_view name);
size_t dtypeSize(DType dtype);

/// Prints a shape as "[2, 8, 768]".
std::string formatDims(const std::vector<int64_t> &shape);

/// One tensor of a mapped file; `data` points into the mapping.
struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t *data;
  size_t bytes;

  int64_t numElements() const;
};

class SafeTensorsFile {
public:
  /// Maps `path` and validates its header: valid JSON nested at most
  /// kMaxHeaderNesting deep, known dtypes, non-negative shapes, and byte
  /// ranges that hold exactly dtype size x elements bytes, do not overlap
  /// and cover the data section exactly (as the format requires: a header
  /// length that is off shifts every tensor). On failure returns null with
  /// `error` naming the file and the fault.
  static std::unique_ptr<SafeTensorsFile> open(const std::string &path,
                                               std::string &error);
  /// The same checks on `size` bytes in memory (copied); `name` stands for
  /// the path in messages.
  static std::unique_ptr<SafeTensorsFile> parse(const std::string &name, const uint8_t *bytes,
                                                size_t size, std::string &error);
  ~SafeTensorsFile();
  SafeTensorsFile(const SafeTensorsFile &) = delete;
  SafeTensorsFile &operator=(const SafeTensorsFile &) = delete;

  const std::string &path() const { return filePath; }
  /// Null when the file has no tensor of that name.
  const TensorView *find(std::string_view name) const;
  /// In header order of their data offsets.
  const std::vector<TensorView> &tensors() const { return views; }
  const std::map<std::string, std::string> &metadata() const { return meta; }

private:
  SafeTensorsFile() = default;
  /// Validates the header of the bytes at `base` (mapped or owned).
  static std::unique_ptr<SafeTensorsFile> validate(std::unique_ptr<SafeTensorsFile> file,
                                                   const uint8_t *base, size_t size,
                                                   std::string &error);

  std::string filePath;
  void *mapping = nullptr;
  size_t mappingSize = 0;
  std::vector<uint8_t> owned;
  std::vector<TensorView> views;
  std::map<std::string, std::string> meta;
};

/// The tensors of a model checkpoint, which may span several files: one
/// safetensors file, a Hugging Face index (`*.json`, e.g.
/// `model.safetensors.index.json`, whose "weight_map" names the file beside
/// it that holds each tensor), or a directory holding `model.safetensors` or
/// that index (the single file first, as `from_pretrained` looks). Every
/// file is mapped; a tensor's bytes are read where it is used.
class SafeTensorsSet {
public:
  /// Opens `path` as above. On failure returns null with `error` naming the
  /// file and the fault: an index whose weight_map is no object of file
  /// names beside it, a tensor its file does not hold, or a tensor a file
  /// holds that the index does not list.
  static std::unique_ptr<SafeTensorsSet> open(const std::string &path, std::string &error);

  /// What the set was opened from.
  const std::string &path() const { return setPath; }
  /// The index file read, or empty for one safetensors file.
  const std::string &index() const { return indexPath; }
  /// The tensor named `name` and the file holding it, or null.
  const TensorView *find(std::string_view name, const SafeTensorsFile **file = nullptr) const;
  struct Entry {
    const TensorView *view;
    const SafeTensorsFile *file;
  };
  /// Every tensor, by name.
  const std::map<std::string, Entry, std::less<>> &tensors() const { return byName; }
  const std::vector<std::unique_ptr<SafeTensorsFile>> &files() const { return fileList; }

  /// The stacked tensor `name` (a name holding kStackIndex) built from the
  /// set's tensors of the names stackedPartName(name, 0), 1, ... (as many as
  /// follow one another from 0), each a slice of a new first dimension:
  /// Hugging Face's per-expert weights as one tensor. Copied on the first
  /// call and kept with the set; `file` is part 0's. Null where the set has
  /// no part 0 or where the parts differ in dtype or shape.
  const TensorView *findStacked(std::string_view name,
                                const SafeTensorsFile **file = nullptr) const;

private:
  struct Stacked {
    TensorView view;
    std::vector<uint8_t> bytes;
    const SafeTensorsFile *file;
  };
  std::string setPath;
  std::string indexPath;
  std::vector<std::unique_ptr<SafeTensorsFile>> fileList;
  std::map<std::string, Entry, std::less<>> byName;
  mutable std::map<std::string, Stacked, std::less<>> stacked;
};

/// The character that stands for the stacked index in the name of a
/// stacked tensor: "model.layers.0.block_sparse_moe.experts.*.w1.weight" is
/// the experts' w1 weights, [E, F, H], of which Hugging Face stores each
/// expert's [F, H] under its index.
constexpr char kStackIndex = '*';

/// Whether `name` is a stacked tensor's.
bool isStackedName(std::string_view name);

/// The name of part `index` of the stacked tensor `name`.
std::string stackedPartName(std::string_view name, int64_t index);

/// Converts a floating-point tensor (F64, F32, F16, BF16) to f32 in `out`,
/// which holds `view.numElements()` floats. Integer tensors are an error.
bool convertToF32(const TensorView &view, float *out, std::string &error);

/// IEEE half and bfloat16 bit patterns to float.
float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data; ///< dtypeSize(dtype) x elements bytes
};

/// `tensor` as a checkpoint holds it: a stacked tensor (isStackedName) as
/// its parts, one per index of its first dimension, each viewing its slice
/// of `tensor.data`; any other tensor as it is.
std::vector<TensorToWrite> unstacked(const TensorToWrite &tensor);

/// Writes `tensors` to `path` through a temporary file renamed into place, so
/// a failed write leaves no partial file and an existing file untouched. The
/// header is padded to a multiple of 8 bytes, as the format recommends.
bool writeSafeTensors(const std::string &path,
                      const std::vector<TensorToWrite> &tensors,
                      const std::map<std::string, std::string> &metadata,
                      std::string &error);

/// Writes the same file in full beside `path` without committing it
/// (OutputFile::finish): the caller commits it when every file of a set is
/// written. Null with `error` set on failure (nothing left behind).
std::unique_ptr<OutputFile> stageSafeTensors(const std::string &path,
                                             const std::vector<TensorToWrite> &tensors,
                                             const std::map<std::string, std::string> &metadata,
                                             std::string &error);

} // namespace pmlir

#endif // PMLIR_SUPPORT_SAFETENSORS_H
