//===- Checkpoint.h - A training run's checkpoint, whole or refused -*- C++ -*-===//
//
// Part of pmlir.
//
// A checkpoint is two safetensors files: the parameters under their Hugging
// Face names (what transformers loads) and, beside them, the optimizer
// state with the step (`X.optimizer.safetensors`). Both carry the save's
// manifest in their metadata (`pmlir.manifest`): every tensor of the two
// files with its CRC-32. A save writes both files in full (on the disk)
// before it renames either over the previous checkpoint, so a full disk or
// a fault while writing leaves the previous checkpoint as it was; a crash
// between the two renames leaves two files whose manifests differ, which
// --resume refuses, as it refuses a tensor whose bytes no longer match.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_CHECKPOINT_H
#define PMLIR_EXECUTION_CHECKPOINT_H

#include "pmlir/Support/SafeTensors.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace pmlir::exec {

/// The CRC-32 of `bytes` bytes at `data` as 8 hex digits: what both
/// checkpoint forms record of each tensor (or block) and check on resume.
std::string checksumOf(const void *data, size_t bytes);

/// The optimizer state's file beside the parameters file `parameters`:
/// `X.safetensors` -> `X.optimizer.safetensors`.
std::string optimizerStatePath(const std::string &parameters);

/// Writes the checkpoint `path` (the parameters) and its optimizer state,
/// both with the manifest, as one unit (see above). Returns false with
/// `error` set when either cannot be written; nothing is replaced then.
/// `staged` runs when both are written and neither is in place (the fault
/// tests stop there).
bool writeCheckpoint(const std::string &path, const std::vector<TensorToWrite> &parameters,
                     const std::vector<TensorToWrite> &optimizer, std::string &error,
                     const std::function<void()> &staged = {});

/// Writes a Hugging Face model directory `directory` (made if missing; its
/// parent must exist): `config` as config.json and `parameters` (under the
/// names transformers loads them by) as model.safetensors, both written in
/// full before either replaces the directory's previous ones. Returns false
/// with `error` set when either cannot be written; nothing is replaced then.
bool exportHuggingFace(const std::string &directory, const std::string &config,
                       const std::vector<TensorToWrite> &parameters, std::string &error);

/// Checks that `parameters` and `optimizer` are one save's: the same
/// manifest in both, every tensor it lists present and, with
/// `readTensors`, matching its checksum (reading every byte: on a mesh one
/// rank does it for all, the others reading only their slices), none it
/// does not list. Checkpoints written before manifests (neither file has
/// one) pass. Returns false with `error` saying what is wrong, naming the
/// file and the tensor.
bool checkCheckpoint(const SafeTensorsFile &parameters, const SafeTensorsFile &optimizer,
                     bool readTensors, std::string &error);

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_CHECKPOINT_H
