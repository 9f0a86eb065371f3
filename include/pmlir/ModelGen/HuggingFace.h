//===- HuggingFace.h - Models from Hugging Face config.json -------*- C++ -*-===//
//
// Part of pmlir.
//
// Reads a Hugging Face model directory's config.json into the config of the
// pmlir-gen family that builds the same model: GPT-2 (model_type gpt2) and
// the Llama family (llama, mistral, qwen2). A field whose value the model
// pmlir builds would not honour is refused by name, never dropped: a wrong
// epsilon, activation, bias or tie cannot pass unnoticed.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_MODELGEN_HUGGINGFACE_H
#define PMLIR_MODELGEN_HUGGINGFACE_H

#include "pmlir/ModelGen/ModelGen.h"

#include "llvm/Support/Error.h"

#include <string>

namespace pmlir {

/// The model a config.json describes: one of the families pmlir-gen builds.
struct HuggingFaceModel {
  enum class Family : uint8_t { Gpt2, Llama };
  Family family = Family::Gpt2;
  /// config.json's model_type ("gpt2", "llama", "mistral", "qwen2").
  std::string modelType;
  Gpt2Config gpt2;
  LlamaConfig llama;
};

/// Reads `path` (a model directory, or its config.json) for a model run on
/// sequences of `seq` in batches of `batch` (with the loss when `loss`). The
/// error names the file, the field and what pmlir cannot honour in it.
llvm::Expected<HuggingFaceModel> readHuggingFaceConfig(const std::string &path, int64_t seq,
                                                       int64_t batch, bool loss);

} // namespace pmlir

#endif // PMLIR_MODELGEN_HUGGINGFACE_H
