//===- SafeTensors.cpp - Memory-mapped safetensors files ------------------===//
//
// Part of pmlir.
//
// The header is parsed without exceptions (the project builds with
// -fno-exceptions): every JSON value is type-checked before it is read.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/SafeTensors.h"
#include "pmlir/Support/ElementCount.h"
#include "pmlir/Support/JsonFields.h"
#include "pmlir/Support/Nesting.h"
#include "pmlir/Support/OutputFile.h"

#include "llvm/ADT/StringRef.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace pmlir;

namespace {

struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "F64", 8}, {DType::F32, "F32", 4}, {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I64, "I64", 8}, {DType::I32, "I32", 4},
    {DType::I16, "I16", 2}, {DType::I8, "I8", 1},   {DType::U8, "U8", 1},
    {DType::Bool, "BOOL", 1},
};

const DTypeInfo &info(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)];
}

// The header length is capped as in the reference implementation (100 MB), so
// a corrupt length cannot make us read or allocate past reason.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// A header is {name: {dtype, shape: [...], data_offsets: [...]}}: three
// levels. Deeper JSON is no safetensors header, and bounding it keeps the
// recursive JSON reader and printer off the end of the stack.
constexpr size_t kMaxHeaderNesting = 16;

/// A JSON value in a sentence: short values whole, long ones cut.
std::string brief(const nlohmann::json &value) {
  std::string text = value.dump();
  return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

} // namespace

const char *pmlir::dtypeName(DType dtype) { return info(dtype).name; }
size_t pmlir::dtypeSize(DType dtype) { return info(dtype).size; }

std::optional<DType> pmlir::parseDType(std::string_view name) {
  for (const DTypeInfo &d : kDTypes)
    if (name == d.name)
      return d.dtype;
  return std::nullopt;
}

std::string pmlir::formatDims(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

int64_t TensorView::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// Reads one header entry into `view`, or returns a sentence on what is wrong.
std::string parseEntry(const std::string &name, const nlohmann::json &entry,
                       uint64_t dataBytes, TensorView &view, uint64_t &begin,
                       uint64_t &end) {
  if (!entry.is_object())
    return "entry is not an object";
  auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string())
    return "missing string 'dtype'";
  std::optional<DType> parsed = parseDType(dtype->get<std::string>());
  if (!parsed)
    return "unknown dtype '" + dtype->get<std::string>() + "'";
  view.dtype = *parsed;

  auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array())
    return "missing array 'shape'";
  for (const nlohmann::json &d : *shape) {
    if (!d.is_number_unsigned())
      return "shape " + brief(*shape) + " holds a value that is not a "
             "non-negative integer";
    if (d.get<uint64_t>() > static_cast<uint64_t>(kMaxTensorElements))
      return "shape " + brief(*shape) + " is too large";
    view.shape.push_back(d.get<int64_t>());
  }
  std::optional<int64_t> elements = checkedProduct(view.shape);
  if (!elements)
    return "shape " + brief(*shape) + " is too large";

  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end())
    return "missing 'data_offsets' [begin, end]";
  if (!offsets->is_array() || offsets->size() != 2)
    return "'data_offsets' " + brief(*offsets) + " is not a pair [begin, end]";
  for (const nlohmann::json &o : *offsets)
    if (!o.is_number_unsigned())
      return "'data_offsets' " + brief(*offsets) + " holds " + brief(o) +
             ", which is not a non-negative integer";
  begin = (*offsets)[0].get<uint64_t>();
  end = (*offsets)[1].get<uint64_t>();
  if (begin > end || end > dataBytes)
    return "data_offsets [" + std::to_string(begin) + ", " +
           std::to_string(end) + "] outside the " + std::to_string(dataBytes) +
           "-byte data section";
  uint64_t expected = static_cast<uint64_t>(*elements) * dtypeSize(view.dtype);
  if (end - begin != expected)
    return "data_offsets hold " + std::to_string(end - begin) +
           " bytes, but dtype " + dtypeName(view.dtype) + " and shape " +
           formatDims(view.shape) + " need " + std::to_string(expected);
  view.bytes = end - begin;
  return "";
}

} // namespace

std::unique_ptr<SafeTensorsFile>
SafeTensorsFile::open(const std::string &path, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = path + ": " + why;
    return nullptr;
  };
  // Not blocking: a FIFO without a writer is refused below, not waited on.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return fail("truncated: " + std::to_string(size) +
                " bytes, shorter than the 8-byte header length");
  }
  void *mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED)
    return fail(std::string("cannot map: ") + std::strerror(errno));

  std::unique_ptr<SafeTensorsFile> file(new SafeTensorsFile());
  file->filePath = path;
  file->mapping = mapping;
  file->mappingSize = size;
  return validate(std::move(file), static_cast<const uint8_t *>(mapping), size, error);
}

std::unique_ptr<SafeTensorsFile> SafeTensorsFile::parse(const std::string &name,
                                                        const uint8_t *bytes, size_t size,
                                                        std::string &error) {
  if (size < 8) {
    error = name + ": truncated: " + std::to_string(size) +
            " bytes, shorter than the 8-byte header length";
    return nullptr;
  }
  std::unique_ptr<SafeTensorsFile> file(new SafeTensorsFile());
  file->filePath = name;
  file->owned.assign(bytes, bytes + size);
  const uint8_t *base = file->owned.data();
  return validate(std::move(file), base, size, error);
}

std::unique_ptr<SafeTensorsFile>
SafeTensorsFile::validate(std::unique_ptr<SafeTensorsFile> file, const uint8_t *bytes,
                          size_t size, std::string &error) {
  const std::string &path = file->filePath;
  auto fail = [&](const std::string &why) {
    error = path + ": " + why;
    return nullptr;
  };
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | bytes[i];
  if (headerBytes > kMaxHeaderBytes || headerBytes > size - 8)
    return fail("corrupt header: it claims " + std::to_string(headerBytes) +
                " bytes, but the file has " + std::to_string(size - 8) +
                " after the length");
  const char *text = reinterpret_cast<const char *>(bytes + 8);
  // The format's header starts at its '{' and is padded with spaces: the
  // JSON reader alone would take a byte-order mark before it, and stop at
  // a NUL (which no JSON text holds) as if the header ended there.
  llvm::StringRef headerText(text, headerBytes);
  if (!headerText.starts_with("{"))
    return fail("corrupt header: it does not start with '{'");
  if (size_t nul = headerText.find('\0'); nul != llvm::StringRef::npos)
    return fail("corrupt header: a NUL byte at header byte " + std::to_string(nul) +
                " (the format pads with spaces)");
  if (size_t depth = bracketDepth({text, static_cast<size_t>(headerBytes)}, /*mlir=*/false);
      depth > kMaxHeaderNesting)
    return fail("corrupt header: JSON nested " + std::to_string(depth) +
                " deep; a safetensors header needs 3 levels (at most " +
                std::to_string(kMaxHeaderNesting) + " are read)");
  std::string duplicate;
  nlohmann::json header =
      nlohmann::json::parse(text, text + headerBytes, duplicateKeyFinder(duplicate),
                            /*allow_exceptions=*/false);
  if (header.is_discarded())
    return fail("corrupt header: not valid JSON");
  if (!duplicate.empty())
    return fail("corrupt header: the key '" + duplicate +
                "' appears twice in one object (which of its two entries holds the tensor?)");

  const uint8_t *data = bytes + 8 + headerBytes;
  uint64_t dataBytes = size - 8 - headerBytes;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object())
        return fail("corrupt header: '__metadata__' is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          return fail("corrupt header: metadata '" + m.key() +
                      "' is not a string");
        file->meta[m.key()] = m->get<std::string>();
      }
      continue;
    }
    TensorView view;
    view.name = it.key();
    uint64_t begin = 0, end = 0;
    std::string why = parseEntry(it.key(), *it, dataBytes, view, begin, end);
    if (!why.empty())
      return fail("corrupt header: tensor '" + it.key() + "': " + why);
    view.data = data + begin;
    file->views.push_back(std::move(view));
    ranges.push_back({begin, end});
  }

  // Order by data offset, and refuse overlapping byte ranges.
  std::vector<size_t> order(file->views.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
  // The ranges must tile the data section: each tensor starts where the
  // one before ends, and the last ends with the file.
  std::vector<TensorView> sorted;
  uint64_t covered = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    size_t i = order[k];
    if (ranges[i].first < covered && ranges[i].first != ranges[i].second)
      return fail("corrupt header: tensors '" + sorted.back().name + "' and '" +
                  file->views[i].name + "' overlap");
    if (ranges[i].first > covered)
      return fail("corrupt header: bytes [" + std::to_string(covered) + ", " +
                  std::to_string(ranges[i].first) + ") of the data section before tensor '" +
                  file->views[i].name + "' belong to no tensor");
    covered = std::max(covered, ranges[i].second);
    sorted.push_back(std::move(file->views[i]));
  }
  if (covered != dataBytes)
    return fail("corrupt header: the tensors cover " + std::to_string(covered) + " of the " +
                std::to_string(dataBytes) +
                " bytes of the data section (a wrong header length shifts the data)");
  file->views = std::move(sorted);
  return file;
}

SafeTensorsFile::~SafeTensorsFile() {
  if (mapping)
    munmap(mapping, mappingSize);
}

const TensorView *SafeTensorsFile::find(std::string_view name) const {
  for (const TensorView &v : views)
    if (v.name == name)
      return &v;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Conversion
//===----------------------------------------------------------------------===//

float pmlir::bfloat16ToFloat(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &word, sizeof(f));
  return f;
}

float pmlir::halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  uint32_t word;
  if (exponent == 0x1f) { // inf or nan
    word = sign | 0x7f800000 | (mantissa << 13);
  } else if (exponent != 0) { // normal
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) { // zero
    word = sign;
  } else { // subnormal: normalize
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ff;
    word = sign | ((113 - shift) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &word, sizeof(f));
  return f;
}

bool pmlir::convertToF32(const TensorView &view, float *out,
                         std::string &error) {
  int64_t n = view.numElements();
  const uint8_t *p = view.data;
  if (n == 0 && (view.dtype == DType::F32 || view.dtype == DType::F64 ||
                 view.dtype == DType::F16 || view.dtype == DType::BF16))
    return true; // nothing to copy (and `out` may be null)
  switch (view.dtype) {
  case DType::F32:
    std::memcpy(out, p, n * sizeof(float));
    return true;
  case DType::F64:
    for (int64_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      out[i] = static_cast<float>(d);
    }
    return true;
  case DType::F16:
  case DType::BF16:
    for (int64_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, p + 2 * i, 2);
      out[i] = view.dtype == DType::F16 ? halfToFloat(bits)
                                        : bfloat16ToFloat(bits);
    }
    return true;
  default:
    error = "tensor '" + view.name + "': dtype " + dtypeName(view.dtype) +
            " is not a floating-point type";
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

bool pmlir::writeSafeTensors(const std::string &path,
                             const std::vector<TensorToWrite> &tensors,
                             const std::map<std::string, std::string> &metadata,
                             std::string &error) {
  std::unique_ptr<OutputFile> file = stageSafeTensors(path, tensors, metadata, error);
  return file && file->commit(error);
}

std::unique_ptr<OutputFile>
pmlir::stageSafeTensors(const std::string &path, const std::vector<TensorToWrite> &tensors,
                        const std::map<std::string, std::string> &metadata, std::string &error) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const TensorToWrite &t : tensors) {
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0) {
        error = path + ": tensor '" + t.name + "' has negative shape " +
                formatDims(t.shape);
        return nullptr;
      }
      elements *= static_cast<uint64_t>(d);
    }
    uint64_t bytes = elements * dtypeSize(t.dtype);
    header[t.name] = {{"dtype", dtypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    sizes.push_back(bytes);
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::unique_ptr<OutputFile> file = OutputFile::open(path, error);
  if (!file)
    return nullptr;
  uint8_t length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  file->write(length, 8);
  file->write(text.data(), text.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    file->write(tensors[i].data, sizes[i]);
  if (!file->finish(error))
    return nullptr;
  return file;
}

//===----------------------------------------------------------------------===//
// Checkpoints of several files
//===----------------------------------------------------------------------===//

namespace {

/// Index files hold one JSON object of metadata and the weight map.
constexpr size_t kMaxIndexNesting = 8;
/// An index larger than this is no index (a 405B model's is under 2 MiB).
constexpr size_t kMaxIndexBytes = size_t(256) << 20;

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

/// The text of the file at `path`, or nullopt with `error`.
std::optional<std::string> readText(const std::string &path, size_t limit, std::string &error) {
  // Not blocking: a FIFO without a writer is refused, not waited on.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
    ::close(fd);
    return std::nullopt;
  }
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      error = path + ": " + std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (got == 0)
      break;
    text.append(buffer, static_cast<size_t>(got));
    if (text.size() > limit) {
      error = path + ": larger than " + std::to_string(limit >> 20) + " MiB, which no index is";
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return text;
}

} // namespace

std::unique_ptr<SafeTensorsSet> SafeTensorsSet::open(const std::string &path, std::string &error) {
  std::string file = path;
  if (isDirectory(path)) {
    std::string single = path + "/model.safetensors", index = single + ".index.json";
    if (exists(single))
      file = single;
    else if (exists(index))
      file = index;
    else {
      error = path + ": a directory holding neither model.safetensors nor "
                     "model.safetensors.index.json";
      return nullptr;
    }
  }
  auto set = std::unique_ptr<SafeTensorsSet>(new SafeTensorsSet());
  set->setPath = path;
  if (file.size() < 5 || file.compare(file.size() - 5, 5, ".json") != 0) {
    std::unique_ptr<SafeTensorsFile> one = SafeTensorsFile::open(file, error);
    if (!one)
      return nullptr;
    for (const TensorView &view : one->tensors())
      set->byName[view.name] = {&view, one.get()};
    set->fileList.push_back(std::move(one));
    return set;
  }

  auto fail = [&](const std::string &why) {
    error = file + ": " + why;
    return nullptr;
  };
  set->indexPath = file;
  std::optional<std::string> text = readText(file, kMaxIndexBytes, error);
  if (!text)
    return nullptr;
  if (size_t depth = bracketDepth(*text, /*mlir=*/false); depth > kMaxIndexNesting)
    return fail("not a safetensors index: JSON nested " + std::to_string(depth) + " deep");
  std::string duplicate;
  nlohmann::json index =
      nlohmann::json::parse(*text, duplicateKeyFinder(duplicate), /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object())
    return fail("not a safetensors index: not a JSON object");
  if (!duplicate.empty())
    return fail("not a safetensors index: the key '" + duplicate +
                "' appears twice in one object (which shard holds the tensor?)");
  auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object())
    return fail("not a safetensors index: it has no \"weight_map\" object");
  std::string directory = file.substr(0, file.find_last_of('/') + 1);
  std::map<std::string, SafeTensorsFile *> byFile;
  for (auto it = map->begin(); it != map->end(); ++it) {
    if (!it->is_string())
      return fail("weight_map: the file of '" + it.key() + "' is not a string");
    std::string name = it->get<std::string>();
    // Shards lie beside their index: a path elsewhere is refused.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      return fail("weight_map: the file of '" + it.key() + "', '" + name +
                  "', is not a file name beside the index");
    SafeTensorsFile *&shard = byFile[name];
    if (!shard) {
      std::unique_ptr<SafeTensorsFile> opened = SafeTensorsFile::open(directory + name, error);
      if (!opened) {
        error = file + ": weight_map names " + error;
        return nullptr;
      }
      shard = opened.get();
      set->fileList.push_back(std::move(opened));
    }
    const TensorView *view = shard->find(it.key());
    if (!view)
      return fail("weight_map puts '" + it.key() + "' in " + name + ", which holds no such tensor");
    set->byName[it.key()] = {view, shard};
  }
  for (auto &[name, shard] : byFile)
    for (const TensorView &view : shard->tensors())
      if (auto at = set->byName.find(view.name);
          at == set->byName.end() || at->second.file != shard)
        return fail(name + " holds '" + view.name +
                    "', which the weight_map does not put there (a shard of another index?)");
  return set;
}

const TensorView *SafeTensorsSet::find(std::string_view name, const SafeTensorsFile **file) const {
  auto it = byName.find(name);
  if (it == byName.end())
    return nullptr;
  if (file)
    *file = it->second.file;
  return it->second.view;
}

bool pmlir::isStackedName(std::string_view name) {
  return name.find(kStackIndex) != std::string_view::npos;
}

std::string pmlir::stackedPartName(std::string_view name, int64_t index) {
  std::string part(name);
  size_t at = part.find(kStackIndex);
  if (at != std::string::npos)
    part.replace(at, 1, std::to_string(index));
  return part;
}

const TensorView *SafeTensorsSet::findStacked(std::string_view name,
                                              const SafeTensorsFile **file) const {
  if (!isStackedName(name))
    return nullptr;
  if (auto it = stacked.find(name); it != stacked.end()) {
    if (file)
      *file = it->second.file;
    return &it->second.view;
  }
  std::vector<const TensorView *> parts;
  const SafeTensorsFile *first = nullptr;
  for (int64_t index = 0;; ++index) {
    const SafeTensorsFile *holder = nullptr;
    const TensorView *part = find(stackedPartName(name, index), &holder);
    if (!part)
      break;
    if (!parts.empty() && (part->dtype != parts[0]->dtype || part->shape != parts[0]->shape))
      return nullptr;
    if (parts.empty())
      first = holder;
    parts.push_back(part);
  }
  if (parts.empty())
    return nullptr;
  Stacked entry;
  entry.file = first;
  size_t partBytes = parts[0]->bytes;
  entry.bytes.resize(partBytes * parts.size());
  for (size_t i = 0; i < parts.size(); ++i)
    if (partBytes)
      std::memcpy(entry.bytes.data() + i * partBytes, parts[i]->data, partBytes);
  entry.view.name = std::string(name);
  entry.view.dtype = parts[0]->dtype;
  entry.view.shape = {static_cast<int64_t>(parts.size())};
  entry.view.shape.insert(entry.view.shape.end(), parts[0]->shape.begin(), parts[0]->shape.end());
  entry.view.bytes = entry.bytes.size();
  auto [it, inserted] = stacked.emplace(std::string(name), std::move(entry));
  // The view points into the bytes where they now stay.
  it->second.view.data = it->second.bytes.data();
  if (file)
    *file = it->second.file;
  return &it->second.view;
}

std::vector<TensorToWrite> pmlir::unstacked(const TensorToWrite &tensor) {
  if (!isStackedName(tensor.name) || tensor.shape.empty())
    return {tensor};
  std::vector<int64_t> partShape(tensor.shape.begin() + 1, tensor.shape.end());
  int64_t partElements = 1;
  for (int64_t d : partShape)
    partElements *= d;
  size_t partBytes = static_cast<size_t>(partElements) * dtypeSize(tensor.dtype);
  std::vector<TensorToWrite> parts;
  for (int64_t i = 0; i < tensor.shape[0]; ++i)
    parts.push_back({stackedPartName(tensor.name, i), tensor.dtype, partShape,
                     static_cast<const uint8_t *>(tensor.data) + i * partBytes});
  return parts;
}
