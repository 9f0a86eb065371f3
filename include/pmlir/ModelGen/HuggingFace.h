//===- HuggingFace.h - Models from Hugging Face config.json -------*- C++ -*-===//
//
// Part of pmlir.
//
// Reads a Hugging Face model directory's config.json into the config of the
// pmlir-gen family that builds the same model: GPT-2 (model_type gpt2) and
// the Llama family (llama, mistral, qwen2, and mixtral with its sparse
// MLPs). A field whose value the model
// pmlir builds would not honour is refused by name, never dropped: a wrong
// epsilon, activation, bias or tie cannot pass unnoticed.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_MODELGEN_HUGGINGFACE_H
#define PMLIR_MODELGEN_HUGGINGFACE_H

#include "pmlir/ModelGen/ModelGen.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Error.h"

#include <string>

namespace pmlir {

/// The model a config.json describes: one of the families pmlir-gen builds.
struct HuggingFaceModel {
  enum class Family : uint8_t { Gpt2, Llama };
  Family family = Family::Gpt2;
  /// config.json's model_type ("gpt2", "llama", "mistral", "qwen2", "mixtral").
  std::string modelType;
  Gpt2Config gpt2;
  LlamaConfig llama;
};

/// Reads `path` (a model directory, or its config.json) for a model run on
/// sequences of `seq` in batches of `batch` (with the loss when `loss`). The
/// error names the file, the field and what pmlir cannot honour in it.
llvm::Expected<HuggingFaceModel> readHuggingFaceConfig(const std::string &path, int64_t seq,
                                                       int64_t batch, bool loss);

/// The config.json transformers builds the same model from: model_type and
/// architectures (GPT2LMHeadModel; LlamaForCausalLM, or Qwen2ForCausalLM
/// for query, key and value biases alone) and every field the model
/// depends on. The model builders keep it in tfm.huggingface_config. Empty
/// for a model no class of transformers holds (query, key and value biases
/// beside MLP biases).
std::string huggingFaceConfig(const Gpt2Config &config);
std::string huggingFaceConfig(const LlamaConfig &config);

/// A config.json's text as the tfm.huggingface_config attribute (a
/// dictionary of its fields: integers as i64, numbers as f64, booleans,
/// strings and arrays; nulls left out), and back.
mlir::DictionaryAttr huggingFaceConfigAttr(mlir::MLIRContext *context, const std::string &config);
std::string huggingFaceConfigText(mlir::DictionaryAttr config);

/// The name transformers' model class of `config` (a config.json's text)
/// loads the parameter `name` (a tfm.name) under: GPT2LMHeadModel's
/// `transformer.` before every name but the LM head's. Empty with `error`
/// when the config names no model class pmlir exports, or a class without
/// such a parameter.
std::string huggingFaceName(const std::string &config, const std::string &name, std::string &error);

} // namespace pmlir

#endif // PMLIR_MODELGEN_HUGGINGFACE_H
