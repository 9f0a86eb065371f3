//===- CheckpointDirectory.h - A checkpoint every rank writes -*- C++ -*-===//
//
// Part of pmlir.
//
// A checkpoint directory holds a training run's parameters and optimizer
// state as the ranks held them, written by every rank at once with nothing
// gathered: `rank-R.safetensors` for each rank R that holds a block no rank
// before it on the mesh holds (one replica of each block: the rank with the
// lowest coordinate on each axis along which the block repeats), each block
// under its tensor's name with where it lies in the global tensor (its
// BlockLayout, padding included) and its CRC-32 in the file's metadata; and
// `index.json`, written last by rank 0, listing every tensor with its pieces.
// It is read back on any mesh: each rank reads, for each block of the new
// layout, the elements from the pieces that hold them, and nothing else.
//
// A save is atomic: the ranks write the new directory beside the target
// (`DIR.saving`), rank 0 writes the index when every rank has written, then
// swaps the new directory with DIR in one rename (renameat2's
// RENAME_EXCHANGE) and removes the old one. A crash or a full disk before
// the swap leaves DIR as it was (and `DIR.saving`, which the next save
// clears); there is never a directory that resume would take half-written.
// The directory must be on a file system every rank sees.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_CHECKPOINTDIRECTORY_H
#define PMLIR_EXECUTION_CHECKPOINTDIRECTORY_H

#include "pmlir/Support/Layout.h"
#include "pmlir/Support/SafeTensors.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pmlir::exec {

/// Whether `path` names a checkpoint directory rather than one consolidated
/// pair of files (Checkpoint.h): every path that does not end in
/// `.safetensors`.
bool isCheckpointDirectory(const std::string &path);

/// One rank's block of a tensor of the training state, to be saved.
struct ShardToWrite {
  std::string name;
  bool parameter = true; ///< else optimizer state
  /// Where the block lies in the global tensor; none: the tensor whole.
  std::optional<BlockLayout> block;
  std::vector<int64_t> shape; ///< the block's shape (padding included)
  const float *data = nullptr;
};

/// Checks, before any work, that `directory` may receive a checkpoint: its
/// parent exists, and it is absent, an empty directory, or a checkpoint
/// directory holding nothing pmlir-run did not write (it replaces nothing
/// else). Returns false with a sentence in `error`.
bool checkCheckpointTarget(const std::string &directory, std::string &error);

/// Rank 0, before the ranks write: makes `directory`.saving, empty (a
/// previous save's left-overs removed, which must be files a save writes).
bool beginCheckpointDirectory(const std::string &directory, std::string &error);

/// A rank's part of the save: writes `shards` (none: nothing) as
/// rank-`rank`.safetensors in `directory`.saving.
bool writeCheckpointShards(const std::string &directory, int64_t rank,
                           const std::vector<ShardToWrite> &shards, std::string &error);

/// Rank 0, once every rank has written its part (`files` of them wrote a
/// file): writes the index (`mesh` recorded for the reader), then puts the
/// new directory in place of `directory` (see above). `staged` runs when
/// everything is written and nothing is in place (the fault tests stop
/// there). Returns false with `error` set when the files are not all
/// there, the index cannot be written or the pieces disagree; `directory`
/// is as it was then.
bool commitCheckpointDirectory(const std::string &directory, const std::string &mesh, int64_t files,
                               std::string &error, const std::function<void()> &staged = {});

/// Rank 0, when a rank could not write its part: removes `directory`.saving.
void abandonCheckpointDirectory(const std::string &directory);

/// A checkpoint directory opened for reading; its files are mapped when a
/// read first needs them.
class CheckpointDirectory {
public:
  struct Piece {
    size_t file;       ///< index into files()
    BlockLayout block; ///< a whole tensor: one block, the tensor itself
    std::string checksum;
  };
  struct Tensor {
    bool parameter = true;
    std::vector<int64_t> shape;
    std::vector<Piece> pieces;
  };

  /// Reads and validates `directory`'s index: every piece's layout lies in
  /// its tensor's view (whether the pieces cover the tensor, and hold what
  /// their files do, is checked where a read needs it). On failure returns
  /// null with `error` naming the file and the fault.
  static std::unique_ptr<CheckpointDirectory> open(const std::string &directory,
                                                   std::string &error);

  const std::string &path() const { return directoryPath; }
  const std::vector<std::string> &files() const { return fileNames; }
  const std::map<std::string, Tensor, std::less<>> &tensors() const { return byName; }
  /// Null when the checkpoint has no tensor of that name.
  const Tensor *find(std::string_view name) const;

  /// Reads the elements of the tensor `name` that `block` holds (its
  /// padding left alone) into `out`, `block->local` floats; with no block,
  /// the whole tensor. Adds the bytes read to `bytesRead`. False with
  /// `error` set when a file or a piece is not what the index says.
  bool read(std::string_view name, const BlockLayout *block, float *out, uint64_t &bytesRead,
            std::string &error) const;

  /// Checks the checksum of every piece whose place in the index is `rank`
  /// modulo `ranks`: the ranks of a job together read every byte once.
  bool verify(int64_t rank, int64_t ranks, std::string &error) const;

private:
  CheckpointDirectory() = default;
  /// The file `i`, mapped on first use.
  const SafeTensorsFile *file(size_t i, std::string &error) const;
  /// The bytes of `piece` of `name`, checked against the index.
  const TensorView *pieceData(std::string_view name, const Piece &piece, std::string &error) const;

  std::string directoryPath;
  std::vector<std::string> fileNames;
  mutable std::vector<std::unique_ptr<SafeTensorsFile>> opened;
  std::map<std::string, Tensor, std::less<>> byName;
};

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_CHECKPOINTDIRECTORY_H
