//===- CheckpointDirectory.cpp - A checkpoint every rank writes -----------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/CheckpointDirectory.h"
#include "pmlir/Execution/Binding.h"
#include "pmlir/Execution/Checkpoint.h"
#include "pmlir/Support/ElementCount.h"
#include "pmlir/Support/OutputFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

using namespace pmlir;
using namespace pmlir::exec;
using json = nlohmann::json;

namespace {

constexpr const char *kIndexName = "index.json";
/// The index's "format", which says a directory is a checkpoint of ours.
constexpr const char *kFormat = "pmlir.checkpoint";
constexpr int kVersion = 1;
/// A rank file's metadata key listing its blocks.
constexpr const char *kShardsKey = "pmlir.shards";
/// Dimensions and offsets of a piece beyond this are refused: products of
/// a few of them stay far from int64's end.
constexpr int64_t kMaxDim = int64_t(1) << 40;
/// Dimensions of a piece's view: with each index below three times its
/// dimension, a flat index stays below 3^8 * kMaxTensorElements (2^48)
/// < 2^63.
constexpr size_t kMaxRank = 8;

std::string rankFileName(int64_t rank) {
  char name[40];
  std::snprintf(name, sizeof(name), "rank-%05lld.safetensors", static_cast<long long>(rank));
  return name;
}

/// `directory` without trailing slashes.
std::string trimmed(const std::string &directory) {
  std::string path = directory;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  return path;
}

/// Where a save into `given` goes: `given` without trailing slashes or,
/// where that is a symbolic link, the directory the link leads to, so that
/// the link stays a link (as a file's save keeps one) and the directory
/// the save is staged in lies beside the one it replaces.
std::string saveTargetOf(const std::string &given) {
  std::string directory = trimmed(given);
  struct stat st;
  if (::lstat(directory.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
    return directory;
  char *resolved = ::realpath(directory.c_str(), nullptr);
  if (!resolved)
    return directory;
  std::string target = resolved;
  std::free(resolved);
  return target;
}

/// The directory a save into `given` is written in before it replaces the
/// checkpoint.
std::string stagingOf(const std::string &given) { return saveTargetOf(given) + ".saving"; }

std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// A name a save writes in its directory: a rank's file, the index, or the
/// temporary either is written through (OutputFile: ".NAME.<id>.tmp").
bool writtenBySave(llvm::StringRef name) {
  llvm::StringRef base = name;
  if (base.starts_with(".") && base.ends_with(".tmp")) {
    base = base.drop_front().drop_back(4);
    size_t dot = base.find(".safetensors.");
    if (base.starts_with("index.json."))
      return true;
    if (dot == llvm::StringRef::npos)
      return false;
    base = base.take_front(dot + strlen(".safetensors"));
  }
  if (base == kIndexName)
    return true;
  if (!base.consume_front("rank-") || !base.consume_back(".safetensors") || base.empty())
    return false;
  return llvm::all_of(base, [](char c) { return c >= '0' && c <= '9'; });
}

/// A rank's file: rank-<digits>.safetensors.
bool isRankFileName(llvm::StringRef name) {
  return name.consume_front("rank-") && name.consume_back(".safetensors") && !name.empty() &&
         llvm::all_of(name, [](char c) { return c >= '0' && c <= '9'; });
}

/// The names in `directory` (without "." and ".."); false with `error`.
bool listDirectory(const std::string &directory, std::vector<std::string> &names,
                   std::string &error) {
  DIR *dir = ::opendir(directory.c_str());
  if (!dir) {
    error = "cannot read '" + directory + "': " + std::strerror(errno);
    return false;
  }
  while (struct dirent *entry = ::readdir(dir)) {
    llvm::StringRef name(entry->d_name);
    if (name != "." && name != "..")
      names.push_back(name.str());
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return true;
}

/// Removes what a save wrote in `directory`, then the directory; what it
/// did not write stays (and the directory with it).
void removeSaveDirectory(const std::string &directory) {
  std::vector<std::string> names;
  std::string ignored;
  if (!listDirectory(directory, names, ignored))
    return;
  for (const std::string &name : names)
    if (writtenBySave(name))
      ::unlink((directory + "/" + name).c_str());
  ::rmdir(directory.c_str());
}

bool syncDirectory(const std::string &directory) {
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  return synced;
}

json blockJson(const BlockLayout &block) {
  json j = {{"global", block.global}, {"local", block.local}, {"offset", block.offset}};
  if (block.orderedDim) {
    j["ordered_dim"] = *block.orderedDim;
    j["order"] = {block.order.ranks, block.order.length};
  }
  return j;
}

/// The one block of a tensor of `shape` held whole.
BlockLayout wholeBlock(const std::vector<int64_t> &shape) {
  BlockLayout block;
  block.shape = block.global = block.local = shape;
  block.offset.assign(shape.size(), 0);
  return block;
}

/// A list of whole numbers in [0, kMaxDim], or nullopt.
std::optional<std::vector<int64_t>> dimsOf(const json &j) {
  if (!j.is_array())
    return std::nullopt;
  std::vector<int64_t> dims;
  for (const json &d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > kMaxDim)
      return std::nullopt;
    dims.push_back(d.get<int64_t>());
  }
  return dims;
}

/// A piece's block of a tensor of `shape` from its JSON, checked so that
/// every element it places lies in the tensor and in the piece; nullopt
/// with `why` (a phrase) when it does not.
std::optional<BlockLayout> blockFromJson(const json &j, const std::vector<int64_t> &shape,
                                         std::string &why) {
  BlockLayout block;
  block.shape = shape;
  std::optional<std::vector<int64_t>> global, local, offset;
  if (!j.is_object() || !(global = dimsOf(j.value("global", json()))) ||
      !(local = dimsOf(j.value("local", json()))) ||
      !(offset = dimsOf(j.value("offset", json()))) || global->size() != local->size() ||
      global->size() != offset->size()) {
    why = "its block is no {global, local, offset} of equal lengths of whole numbers";
    return std::nullopt;
  }
  std::optional<int64_t> elements = checkedProduct(shape), view = checkedProduct(*global);
  if (!elements || !view || *elements != *view || !checkedProduct(*local)) {
    why = "its block's view " + formatDims(*global) + " does not hold the tensor's " +
          formatDims(shape) + " elements";
    return std::nullopt;
  }
  // A block lies in its view: no wider than it, starting inside it or in
  // the padding just past it (a last device's block of an uneven split),
  // so that the flat indices of its rows stay far from int64's end.
  if (global->size() > kMaxRank) {
    why = "its block has more than " + std::to_string(kMaxRank) + " dimensions";
    return std::nullopt;
  }
  for (size_t d = 0; d < global->size(); ++d)
    if ((*local)[d] > (*global)[d] ||
        (*offset)[d] >= (*global)[d] + std::max<int64_t>(1, (*local)[d])) {
      why = "its block " + formatDims(*local) + " at " + formatDims(*offset) +
            " does not lie in its view " + formatDims(*global);
      return std::nullopt;
    }
  block.global = *global;
  block.local = *local;
  block.offset = *offset;
  if (j.contains("ordered_dim")) {
    const json &d = j["ordered_dim"], &order = j.value("order", json());
    std::optional<std::vector<int64_t>> ranksLength = dimsOf(order);
    if (!d.is_number_unsigned() || d.get<size_t>() >= block.global.size() || !ranksLength ||
        ranksLength->size() != 2) {
      why = "its block's head-tail order is no dimension with [ranks, length]";
      return std::nullopt;
    }
    size_t dim = d.get<size_t>();
    int64_t ranks = (*ranksLength)[0], length = (*ranksLength)[1];
    if (ranks < 1 || length < ranks || length != block.global[dim] || length % ranks != 0 ||
        block.local[dim] != length / ranks || block.offset[dim] % block.local[dim] != 0) {
      why = "its block's head-tail order does not split dimension " + std::to_string(dim) +
            " in equal blocks";
      return std::nullopt;
    }
    block.orderedDim = dim;
    block.order = HeadTailOrder{ranks, length};
  }
  return block;
}

} // namespace

bool exec::isCheckpointDirectory(const std::string &path) {
  return !llvm::StringRef(path).ends_with(".safetensors");
}

/// Why `staging` cannot hold a save: something there no save wrote (a
/// save that did not finish leaves only its own files, which the next one
/// removes).
static std::optional<std::string> stagingProblem(const std::string &staging) {
  struct stat st;
  if (::lstat(staging.c_str(), &st) != 0)
    return std::nullopt;
  if (!S_ISDIR(st.st_mode))
    return "'" + staging + "', where the save is written, exists and is no directory";
  std::vector<std::string> names;
  std::string error;
  if (!listDirectory(staging, names, error))
    return error;
  for (const std::string &name : names)
    if (!writtenBySave(name))
      return "'" + staging + "', left by a save that did not finish, holds '" + name +
             "', which no save wrote: remove it";
  return std::nullopt;
}

bool exec::checkCheckpointTarget(const std::string &given, std::string &error) {
  std::string directory = saveTargetOf(given);
  struct stat link;
  if (::lstat(directory.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    error = "'" + given + "' is a symbolic link that leads to no directory";
    return false;
  }
  llvm::StringRef last = llvm::StringRef(directory).rsplit('/').second;
  if (last.empty())
    last = directory;
  if (last == "." || last == ".." || directory == "/") {
    error = "'" + given + "' names no directory of its own: name the checkpoint directory";
    return false;
  }
  std::string parent = parentOf(directory);
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = "'" + given + "': the directory '" + parent + "' it would be made in does not exist";
    return false;
  }
  if (::access(parent.c_str(), W_OK | X_OK) != 0) {
    error = "'" + given + "': the directory '" + parent + "' it would be made in is not writable";
    return false;
  }
  if (std::optional<std::string> problem = stagingProblem(stagingOf(directory))) {
    error = *problem;
    return false;
  }
  if (::stat(directory.c_str(), &st) != 0)
    return true;
  if (!S_ISDIR(st.st_mode)) {
    error = "'" + given +
            "' is a file, not a checkpoint directory (a path ending in .safetensors saves "
            "one consolidated checkpoint)";
    return false;
  }
  std::vector<std::string> names;
  if (!listDirectory(directory, names, error))
    return false;
  bool indexed = llvm::is_contained(names, kIndexName);
  for (const std::string &name : names)
    if (!indexed || !writtenBySave(name)) {
      error = "'" + given + "' holds '" + name +
              "', which is no part of a checkpoint pmlir-run wrote: pmlir-run replaces only "
              "its own checkpoints (name a new directory)";
      return false;
    }
  return true;
}

bool exec::beginCheckpointDirectory(const std::string &directory, std::string &error) {
  std::string staging = stagingOf(directory);
  if (std::optional<std::string> problem = stagingProblem(staging)) {
    error = *problem;
    return false;
  }
  // A previous save that did not finish: its files alone are removed.
  struct stat st;
  if (::lstat(staging.c_str(), &st) == 0)
    removeSaveDirectory(staging);
  if (::mkdir(staging.c_str(), 0777) != 0) {
    error = "cannot make '" + staging + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

bool exec::writeCheckpointShards(const std::string &directory, int64_t rank,
                                 const std::vector<ShardToWrite> &shards, std::string &error) {
  if (shards.empty())
    return true;
  std::vector<TensorToWrite> tensors;
  json described = json::object();
  for (const ShardToWrite &shard : shards) {
    tensors.push_back({shard.name, DType::F32, shard.shape, shard.data});
    BlockLayout block = shard.block ? *shard.block : wholeBlock(shard.shape);
    json entry = {{"kind", shard.parameter ? "parameter" : "optimizer"},
                  {"shape", block.shape},
                  {"crc32", checksumOf(shard.data, elementCount(shard.shape) * sizeof(float))},
                  {"block", blockJson(block)}};
    described[shard.name] = std::move(entry);
  }
  std::unique_ptr<OutputFile> file =
      stageSafeTensors(stagingOf(directory) + "/" + rankFileName(rank), tensors,
                       {{"format", "pt"}, {kShardsKey, described.dump()}}, error);
  return file && file->commit(error);
}

bool exec::commitCheckpointDirectory(const std::string &given, const std::string &mesh,
                                     int64_t files, std::string &error,
                                     const std::function<void()> &staged) {
  std::string directory = saveTargetOf(given), staging = stagingOf(directory);
  std::vector<std::string> names;
  if (!listDirectory(staging, names, error))
    return false;
  // Every rank's file, as the ranks counted them: a listing that misses
  // one (a file system's stale view) saves nothing.
  int64_t listed = llvm::count_if(names, [](const std::string &n) { return isRankFileName(n); });
  if (listed != files) {
    error = "'" + staging + "' shows " + std::to_string(listed) + " rank files of the " +
            std::to_string(files) + " the ranks wrote";
    return false;
  }
  // The index: every rank file's blocks, by tensor.
  json fileList = json::array(), tensors = json::object();
  for (const std::string &name : names) {
    if (!isRankFileName(name))
      continue;
    std::unique_ptr<SafeTensorsFile> file = SafeTensorsFile::open(staging + "/" + name, error);
    if (!file)
      return false;
    auto it = file->metadata().find(kShardsKey);
    json described = it == file->metadata().end()
                         ? json()
                         : json::parse(it->second, nullptr, /*allow_exceptions=*/false);
    if (!described.is_object()) {
      error = file->path() + " lists no blocks (metadata '" + kShardsKey + "')";
      return false;
    }
    size_t fileIndex = fileList.size();
    fileList.push_back(name);
    for (auto &[tensorName, entry] : described.items()) {
      json &tensor = tensors[tensorName];
      if (tensor.is_null())
        tensor = {{"kind", entry["kind"]}, {"shape", entry["shape"]}, {"pieces", json::array()}};
      else if (tensor["kind"] != entry["kind"] || tensor["shape"] != entry["shape"]) {
        error = "the ranks saved tensor '" + tensorName +
                "' differently: " + tensor["kind"].dump() + " " + tensor["shape"].dump() +
                " before, " + entry["kind"].dump() + " " + entry["shape"].dump() + " in " + name;
        return false;
      }
      json piece = entry["block"];
      piece["file"] = fileIndex;
      piece["crc32"] = entry["crc32"];
      tensor["pieces"].push_back(std::move(piece));
    }
  }
  json index = {{"format", kFormat},
                {"version", kVersion},
                {"mesh", mesh},
                {"files", std::move(fileList)},
                {"tensors", std::move(tensors)}};
  std::unique_ptr<OutputFile> out = OutputFile::open(staging + "/" + kIndexName, error);
  if (!out)
    return false;
  out->write(index.dump(1) + "\n");
  if (!out->finish(error) || !out->commit(error))
    return false;
  if (!syncDirectory(staging)) {
    error = "cannot write '" + staging + "': " + std::strerror(errno);
    return false;
  }
  if (staged)
    staged();
  // One rename puts the new checkpoint in place of the old (or of an empty
  // directory); where the file system cannot exchange, the old one is
  // moved aside first.
  struct stat st;
  bool replaces = ::stat(directory.c_str(), &st) == 0;
  if (replaces &&
      ::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, directory.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS) {
      error =
          "cannot put '" + staging + "' in place of '" + directory + "': " + std::strerror(errno);
      return false;
    }
    // A name of its own for the old one, never an existing path.
    std::string aside;
    for (int attempt = 0; aside.empty() && attempt < 100; ++attempt) {
      std::string candidate =
          directory + ".previous." + std::to_string(::getpid()) + "." + std::to_string(attempt);
      struct stat existing;
      if (::lstat(candidate.c_str(), &existing) != 0 && errno == ENOENT)
        aside = candidate;
    }
    if (aside.empty() || std::rename(directory.c_str(), aside.c_str()) != 0) {
      error = "cannot move '" + directory + "' aside: " + std::strerror(errno);
      return false;
    }
    if (std::rename(staging.c_str(), directory.c_str()) != 0) {
      error =
          "cannot put '" + staging + "' in place of '" + directory + "': " + std::strerror(errno);
      std::rename(aside.c_str(), directory.c_str()); // the old one back
      return false;
    }
    removeSaveDirectory(aside);
  } else if (!replaces && std::rename(staging.c_str(), directory.c_str()) != 0) {
    error = "cannot put '" + staging + "' in place of '" + directory + "': " + std::strerror(errno);
    return false;
  }
  // The old checkpoint, now under the staging name.
  if (replaces)
    removeSaveDirectory(staging);
  syncDirectory(parentOf(directory));
  return true;
}

void exec::abandonCheckpointDirectory(const std::string &directory) {
  removeSaveDirectory(stagingOf(directory));
}

std::unique_ptr<CheckpointDirectory> CheckpointDirectory::open(const std::string &given,
                                                               std::string &error) {
  std::string directory = trimmed(given), indexPath = directory + "/" + kIndexName;
  std::unique_ptr<CheckpointDirectory> checkpoint(new CheckpointDirectory());
  checkpoint->directoryPath = directory;
  struct stat st;
  if (::stat(directory.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    error = "'" + given +
            "' is a file, not a checkpoint directory (a consolidated checkpoint's name ends in "
            ".safetensors)";
    return nullptr;
  }
  std::FILE *f = std::fopen(indexPath.c_str(), "rb");
  if (!f) {
    error = indexPath + ": cannot open: " + std::strerror(errno) +
            (errno == ENOENT ? " (no checkpoint directory pmlir-run saved)" : "");
    return nullptr;
  }
  json index = json::parse(f, nullptr, /*allow_exceptions=*/false);
  std::fclose(f);
  auto corrupt = [&](const std::string &what) {
    error = indexPath + " is corrupt: " + what;
    return nullptr;
  };
  if (!index.is_object() || index.value("format", json()) != kFormat)
    return corrupt("it is no JSON object of format '" + std::string(kFormat) + "'");
  if (index.value("version", json()) != kVersion)
    return corrupt("its version is " + index.value("version", json()).dump() + ", not " +
                   std::to_string(kVersion));
  const json &files = index.value("files", json()), &tensors = index.value("tensors", json());
  if (!files.is_array() || !tensors.is_object())
    return corrupt("it lacks its 'files' list or its 'tensors' object");
  for (const json &name : files) {
    if (!name.is_string() || !isRankFileName(name.get<std::string>()))
      return corrupt("'files' holds an entry that is no rank file's name");
    checkpoint->fileNames.push_back(name.get<std::string>());
  }
  checkpoint->opened.resize(checkpoint->fileNames.size());
  for (auto &[name, entry] : tensors.items()) {
    std::string what = "tensor '" + name + "': ";
    std::optional<std::vector<int64_t>> shape;
    if (!entry.is_object() || !(shape = dimsOf(entry.value("shape", json()))) ||
        !checkedProduct(*shape))
      return corrupt(what + "it has no shape of whole numbers");
    json kind = entry.value("kind", json());
    if (kind != "parameter" && kind != "optimizer")
      return corrupt(what + "its kind is neither 'parameter' nor 'optimizer'");
    const json &pieces = entry.value("pieces", json());
    if (!pieces.is_array() || pieces.empty())
      return corrupt(what + "it lists no pieces");
    Tensor tensor{kind == "parameter", *shape, {}};
    for (const json &piece : pieces) {
      std::string why;
      std::optional<BlockLayout> block = blockFromJson(piece, *shape, why);
      if (!block)
        return corrupt(what + why);
      const json &file = piece.value("file", json()), &crc = piece.value("crc32", json());
      if (!file.is_number_unsigned() || file.get<size_t>() >= checkpoint->fileNames.size())
        return corrupt(what + "a piece names no file of the list");
      if (!crc.is_string())
        return corrupt(what + "a piece has no checksum");
      tensor.pieces.push_back({file.get<size_t>(), std::move(*block), crc.get<std::string>()});
    }
    checkpoint->byName.emplace(name, std::move(tensor));
  }
  return checkpoint;
}

const CheckpointDirectory::Tensor *CheckpointDirectory::find(std::string_view name) const {
  auto it = byName.find(name);
  return it == byName.end() ? nullptr : &it->second;
}

const SafeTensorsFile *CheckpointDirectory::file(size_t i, std::string &error) const {
  if (!opened[i])
    opened[i] = SafeTensorsFile::open(directoryPath + "/" + fileNames[i], error);
  return opened[i].get();
}

const TensorView *CheckpointDirectory::pieceData(std::string_view name, const Piece &piece,
                                                 std::string &error) const {
  const SafeTensorsFile *f = file(piece.file, error);
  if (!f)
    return nullptr;
  // The block as the rank held it: its shape may be the view's with a
  // dimension of parts made one.
  const TensorView *view = f->find(name);
  if (!view || view->dtype != DType::F32 ||
      view->numElements() != *checkedProduct(piece.block.local)) {
    error = f->path() + " does not hold tensor '" + std::string(name) + "' as F32 of " +
            std::to_string(*checkedProduct(piece.block.local)) +
            " elements, as its index says: the checkpoint is corrupt";
    return nullptr;
  }
  return view;
}

bool CheckpointDirectory::read(std::string_view name, const BlockLayout *block, float *out,
                               uint64_t &bytesRead, std::string &error) const {
  const Tensor *tensor = find(name);
  if (!tensor) {
    error = directoryPath + " has no tensor '" + std::string(name) + "'";
    return false;
  }
  // Where each piece's rows lie in the global tensor (flat indices), in
  // order.
  struct Run {
    int64_t at, length;
    size_t piece;
    int64_t from;
  };
  // Each piece is checked against its file first: the rows listed are
  // then as many as the files hold.
  std::vector<const TensorView *> views;
  for (const Piece &piece : tensor->pieces)
    if (!views.emplace_back(pieceData(name, piece, error)))
      return false;
  std::vector<Run> runs;
  for (auto [p, piece] : llvm::enumerate(tensor->pieces))
    piece.block.forEachRow([&, p = p](int64_t at, int64_t from, int64_t length) {
      runs.push_back({at, length, p, from});
    });
  std::sort(runs.begin(), runs.end(), [](const Run &a, const Run &b) { return a.at < b.at; });
  BlockLayout whole = block ? BlockLayout() : wholeBlock(tensor->shape);
  const BlockLayout &target = block ? *block : whole;
  std::string failure;
  target.forEachRow([&](int64_t at, int64_t into, int64_t length) {
    while (length > 0 && failure.empty()) {
      auto next = std::upper_bound(runs.begin(), runs.end(), at,
                                   [](int64_t a, const Run &r) { return a < r.at; });
      if (next == runs.begin() || at >= std::prev(next)->at + std::prev(next)->length) {
        failure = directoryPath + " is corrupt: no piece of tensor '" + std::string(name) +
                  "' holds its element at flat index " + std::to_string(at);
        return;
      }
      const Run &run = *std::prev(next);
      const TensorView *view = views[run.piece];
      int64_t n = std::min(length, run.at + run.length - at);
      std::memcpy(out + into, view->data + (run.from + at - run.at) * sizeof(float),
                  n * sizeof(float));
      bytesRead += n * sizeof(float);
      at += n;
      into += n;
      length -= n;
    }
  });
  if (!failure.empty()) {
    error = failure;
    return false;
  }
  return true;
}

bool CheckpointDirectory::verify(int64_t rank, int64_t ranks, std::string &error) const {
  int64_t k = 0;
  for (auto &[name, tensor] : byName)
    for (const Piece &piece : tensor.pieces) {
      if (k++ % ranks != rank)
        continue;
      const TensorView *view = pieceData(name, piece, error);
      if (!view)
        return false;
      if (checksumOf(view->data, view->bytes) != piece.checksum) {
        error = "tensor '" + name + "' in " + directoryPath + "/" + fileNames[piece.file] +
                " does not match the checksum its save recorded: the file is corrupt";
        return false;
      }
    }
  return true;
}
