//===- ModelGen.h - Whole transformer models as tfm IR ------------*- C++ -*-===//
//
// Part of pmlir.
//
// Builds GPT-2 and Llama forward passes at global shapes. Every weight is an
// argument of @forward named after its Hugging Face checkpoint tensor, in the
// checkpoint's layout, so that real checkpoints bind to the IR by name.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_MODELGEN_MODELGEN_H
#define PMLIR_MODELGEN_MODELGEN_H

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace pmlir {

/// A GPT-2 model (Hugging Face GPT2LMHeadModel).
struct Gpt2Config {
  int64_t layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t vocab = 50257;
  int64_t seq = 1024;
  int64_t batch = 1;
  /// The rows of the position embedding (n_positions).
  int64_t maxPositions = 1024;
  /// The MLP's inner size (n_inner); 0: 4 x hidden.
  int64_t ffn = 0;
  double layerNormEps = 1e-5;
  /// The MLP's GELU (activation_function gelu_new: tanh; gelu: erf).
  tfm::GeluApproximation gelu = tfm::GeluApproximation::tanh;
  /// The LM head is wte (tie_word_embeddings), else `lm_head.weight`.
  bool tieEmbeddings = true;
  /// @forward takes `labels` and returns the loss instead of the logits.
  bool loss = false;

  int64_t inner() const { return ffn > 0 ? ffn : 4 * hidden; }
};

/// Which of a Llama-family attention's projections add a bias: none
/// (Llama), query, key and value (Qwen2), or all four with the output
/// (Llama's attention_bias).
enum class ProjectionBias : uint8_t { None, QueryKeyValue, All };

/// A Llama model (Hugging Face LlamaForCausalLM), or with `experts` a
/// Mixtral model (MixtralForCausalLM: Llama's attention, sparse MLPs).
struct LlamaConfig {
  int64_t layers = 32;
  int64_t hidden = 4096;
  int64_t heads = 32;
  int64_t kvHeads = 32;
  int64_t ffn = 11008;
  int64_t vocab = 32000;
  int64_t seq = 2048;
  int64_t batch = 1;
  double rmsEps = 1e-6;
  double ropeTheta = 10000.0;
  bool tieEmbeddings = false;
  /// The positions the model was trained for (max_position_embeddings;
  /// 0: --seq); --seq may not exceed it.
  int64_t maxPositions = 0;
  ProjectionBias attentionBias = ProjectionBias::None;
  /// The MLP's projections add biases (mlp_bias).
  bool mlpBias = false;
  /// The experts of each sparse MLP (Mixtral's num_local_experts), each a
  /// SwiGLU MLP of `ffn`; 0: every MLP is dense.
  int64_t experts = 0;
  /// The experts each token goes to (num_experts_per_tok).
  int64_t topK = 2;
  /// Always-on experts beside the routed ones, as DeepSeek's
  /// n_shared_experts: one SwiGLU MLP of `sharedExperts * ffn` that every
  /// token passes through, added to the routed experts' output; 0: none.
  int64_t sharedExperts = 0;
  /// The weight of the load-balancing loss added to the loss
  /// (router_aux_loss_coef, where output_router_logits); 0: none.
  double routerAuxLossCoef = 0.0;
  /// Each expert takes at most ceil(capacityFactor * seq * topK / experts)
  /// of a sequence's choices, first come, first served; the rest are
  /// dropped (tfm.moe_capacity). 0: dropless.
  double capacityFactor = 0.0;
  /// @forward takes `labels` and returns the loss instead of the logits.
  bool loss = false;
};

/// One weight argument of @forward.
struct WeightSpec {
  std::string name;               ///< checkpoint tensor name
  std::vector<int64_t> shape;     ///< checkpoint layout
  std::vector<std::string> dims;  ///< role of each dimension ("in", "out", ...)

  int64_t numElements() const;
};

/// The most layers a model may have: far above any model's, so that a
/// corrupt count (1e9) is refused rather than built until memory runs out.
inline constexpr int64_t kMaxLayers = int64_t(1) << 16;

/// How a message names a size given by pmlir-gen's flag `flag` ("heads").
using SizeNamer = llvm::function_ref<std::string(llvm::StringRef flag)>;
/// pmlir-gen's flag: "--heads".
std::string flagName(llvm::StringRef flag);

/// An error naming the size at fault (by `name`: pmlir-gen's flag, or a
/// config's field) and the constraint it breaks, or success.
llvm::Error validate(const Gpt2Config &config, SizeNamer name = flagName);
llvm::Error validate(const LlamaConfig &config, SizeNamer name = flagName);

/// The weights of @forward in argument order (after input_ids and labels).
std::vector<WeightSpec> gpt2Weights(const Gpt2Config &config);
std::vector<WeightSpec> llamaWeights(const LlamaConfig &config);

/// A module holding @forward(input_ids, weights...) -> logits [B, S, V],
/// or with `loss` @forward(input_ids, labels, weights...) -> the mean token
/// cross entropy (tfm.cross_entropy, ignore index -100; labels[b, s] is the
/// target of position s: the next token, as the caller shifts them). The
/// config must have passed validate().
mlir::OwningOpRef<mlir::ModuleOp> buildGpt2(mlir::MLIRContext *context,
                                            const Gpt2Config &config);
mlir::OwningOpRef<mlir::ModuleOp> buildLlama(mlir::MLIRContext *context,
                                             const LlamaConfig &config);

} // namespace pmlir

#endif // PMLIR_MODELGEN_MODELGEN_H
