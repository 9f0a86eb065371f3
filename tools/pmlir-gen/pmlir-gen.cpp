//===- pmlir-gen.cpp - Writes whole transformer models as tfm IR ----------===//
//
// Part of pmlir.
//
//   pmlir-gen gpt2 --layers L --hidden H --heads A --vocab V --seq S
//                  --batch B [--max-positions P] [--ffn F] [--layer-norm-eps E]
//                  [--activation gelu_new|gelu] [--untied-head] [--loss] -o FILE
//   pmlir-gen llama --layers L --hidden H --heads A --kv-heads K --ffn F
//                   --vocab V --seq S --batch B [--rms-eps E]
//                   [--rope-theta T] [--tie-embeddings] [--max-positions P]
//                   [--attention-bias none|qkv|all] [--mlp-bias] [--loss] -o FILE
//   pmlir-gen mixtral (llama's flags but the biases) --experts E [--top-k K]
//                     [--router-aux-loss-coef C] [--capacity-factor F]
//                     [--shared-experts S] -o FILE
//   pmlir-gen hf DIR --seq S --batch B [--loss] -o FILE
//   --locations prints each op's location, its checkpoint prefix ("h.3.attn").
//
// `hf` reads a Hugging Face model directory's config.json and builds the
// model it describes (GPT-2, or Llama, Mistral, Qwen2 and Mixtral through
// llama and mixtral),
// refusing by name a field it cannot honour. The output starts with a
// comment holding the command that regenerates it (for `hf`, the gpt2,
// llama or mixtral command of the same model). Nothing is written unless the model is
// valid and verifies.
//
//===----------------------------------------------------------------------===//

#include "pmlir/ModelGen/HuggingFace.h"
#include "pmlir/ModelGen/ModelGen.h"
#include "pmlir/Support/OutputFile.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

using namespace llvm;

static cl::SubCommand gpt2Command("gpt2", "GPT-2 (Hugging Face GPT2LMHeadModel)");
static cl::SubCommand llamaCommand("llama",
                                   "Llama (Hugging Face LlamaForCausalLM)");
static cl::SubCommand mixtralCommand("mixtral", "Mixtral (Hugging Face MixtralForCausalLM): "
                                                "Llama with sparse mixture-of-experts MLPs");
static cl::SubCommand hfCommand("hf", "the model of a Hugging Face directory's config.json "
                                      "(gpt2, llama, mistral, qwen2, mixtral)");

static cl::OptionCategory modelCategory("Model options");

static cl::opt<int64_t> layersFlag("layers", cl::desc("transformer blocks"), cl::Required,
                                   cl::sub(gpt2Command), cl::sub(llamaCommand),
                                   cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<int64_t> hiddenFlag("hidden", cl::desc("hidden size"), cl::Required,
                                   cl::sub(gpt2Command), cl::sub(llamaCommand),
                                   cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<int64_t> headsFlag("heads", cl::desc("attention (query) heads"), cl::Required,
                                  cl::sub(gpt2Command), cl::sub(llamaCommand),
                                  cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<int64_t> vocabFlag("vocab", cl::desc("vocabulary size"), cl::Required,
                                  cl::sub(gpt2Command), cl::sub(llamaCommand),
                                  cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<int64_t> seqFlag("seq", cl::desc("sequence length"), cl::Required,
                                cl::sub(gpt2Command), cl::sub(llamaCommand),
                                cl::sub(mixtralCommand), cl::sub(hfCommand),
                                cl::cat(modelCategory));
static cl::opt<int64_t> batchFlag("batch", cl::desc("batch size"), cl::Required,
                                  cl::sub(gpt2Command), cl::sub(llamaCommand),
                                  cl::sub(mixtralCommand), cl::sub(hfCommand),
                                  cl::cat(modelCategory));
static cl::opt<std::string> outputFile("o", cl::desc("output file ('-' for stdout)"),
                                       cl::value_desc("FILE"), cl::init("-"), cl::sub(gpt2Command),
                                       cl::sub(llamaCommand), cl::sub(mixtralCommand),
                                       cl::sub(hfCommand), cl::cat(modelCategory));

static cl::opt<bool>
    lossFlag("loss",
             cl::desc("@forward also takes 'labels' [batch, seq] (the next tokens; -100 is "
                      "ignored) and returns the mean cross entropy instead of the logits"),
             cl::init(false), cl::sub(gpt2Command), cl::sub(llamaCommand), cl::sub(mixtralCommand),
             cl::sub(hfCommand), cl::cat(modelCategory));

static cl::opt<bool>
    locationsFlag("locations",
                  cl::desc("print op locations (checkpoint prefixes such as \"h.3.attn\"), "
                           "so that diagnostics on the IR name the model part"),
                  cl::init(false), cl::sub(gpt2Command), cl::sub(llamaCommand),
                  cl::sub(mixtralCommand), cl::sub(hfCommand), cl::cat(modelCategory));

static cl::opt<std::string> hfDirectory(cl::Positional, cl::Required,
                                        cl::desc("<Hugging Face model directory or config.json>"),
                                        cl::sub(hfCommand), cl::cat(modelCategory));

static cl::opt<int64_t> maxPositionsFlag(
    "max-positions",
    cl::desc("rows of the position embedding (n_positions; default 1024, every GPT-2's)"),
    cl::init(1024), cl::sub(gpt2Command), cl::cat(modelCategory));
static cl::opt<int64_t> gpt2FfnFlag("ffn", cl::desc("MLP inner size (n_inner; default 4 x hidden)"),
                                    cl::init(0), cl::sub(gpt2Command), cl::cat(modelCategory));
static cl::opt<double> layerNormEpsFlag("layer-norm-eps",
                                        cl::desc("LayerNorm epsilon (layer_norm_epsilon)"),
                                        cl::init(1e-5), cl::sub(gpt2Command),
                                        cl::cat(modelCategory));
static cl::opt<pmlir::tfm::GeluApproximation> activationFlag(
    "activation", cl::desc("the MLP's GELU (activation_function)"),
    cl::values(clEnumValN(pmlir::tfm::GeluApproximation::tanh, "gelu_new", "tanh GELU"),
               clEnumValN(pmlir::tfm::GeluApproximation::erf, "gelu", "erf GELU")),
    cl::init(pmlir::tfm::GeluApproximation::tanh), cl::sub(gpt2Command), cl::cat(modelCategory));
static cl::opt<bool> untiedHeadFlag("untied-head",
                                    cl::desc("the LM head is lm_head.weight, not wte "
                                             "(tie_word_embeddings false)"),
                                    cl::init(false), cl::sub(gpt2Command), cl::cat(modelCategory));

static cl::opt<int64_t> kvHeadsFlag("kv-heads", cl::desc("key/value heads"), cl::Required,
                                    cl::sub(llamaCommand), cl::sub(mixtralCommand),
                                    cl::cat(modelCategory));
static cl::opt<int64_t> ffnFlag("ffn", cl::desc("MLP intermediate size"), cl::Required,
                                cl::sub(llamaCommand), cl::sub(mixtralCommand),
                                cl::cat(modelCategory));
static cl::opt<double> rmsEpsFlag("rms-eps", cl::desc("RMSNorm epsilon"), cl::init(1e-6),
                                  cl::sub(llamaCommand), cl::sub(mixtralCommand),
                                  cl::cat(modelCategory));
static cl::opt<double> ropeThetaFlag("rope-theta", cl::desc("RoPE base"), cl::init(10000.0),
                                     cl::sub(llamaCommand), cl::sub(mixtralCommand),
                                     cl::cat(modelCategory));
static cl::opt<bool> tieEmbeddingsFlag("tie-embeddings",
                                       cl::desc("LM head shares model.embed_tokens.weight"),
                                       cl::init(false), cl::sub(llamaCommand),
                                       cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<int64_t> llamaMaxPositionsFlag(
    "max-positions",
    cl::desc("the positions the model was trained for (max_position_embeddings; default --seq)"),
    cl::init(0), cl::sub(llamaCommand), cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<pmlir::ProjectionBias>
    attentionBiasFlag("attention-bias", cl::desc("which attention projections add a bias"),
                      cl::values(clEnumValN(pmlir::ProjectionBias::None, "none", "none (Llama)"),
                                 clEnumValN(pmlir::ProjectionBias::QueryKeyValue, "qkv",
                                            "query, key and value (Qwen2)"),
                                 clEnumValN(pmlir::ProjectionBias::All, "all",
                                            "all four with the output (attention_bias)")),
                      cl::init(pmlir::ProjectionBias::None), cl::sub(llamaCommand),
                      cl::cat(modelCategory));
static cl::opt<bool> mlpBiasFlag("mlp-bias",
                                 cl::desc("the MLP's projections add a bias (mlp_bias)"),
                                 cl::init(false), cl::sub(llamaCommand), cl::cat(modelCategory));

static cl::opt<int64_t> expertsFlag("experts",
                                    cl::desc("experts of each sparse MLP (num_local_experts)"),
                                    cl::Required, cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<int64_t> topKFlag("top-k",
                                 cl::desc("experts each token goes to (num_experts_per_tok)"),
                                 cl::init(2), cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<double> routerAuxLossCoefFlag(
    "router-aux-loss-coef",
    cl::desc("with --loss, adds this weight times the load-balancing loss of Hugging Face's "
             "Mixtral (router_aux_loss_coef, output_router_logits); default 0: none"),
    cl::init(0.0), cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<double> capacityFactorFlag(
    "capacity-factor",
    cl::desc("each expert takes at most ceil(F * seq * top-k / experts) of a sequence's "
             "choices, first come, first served, and the rest are dropped (their weight "
             "zero, as Switch Transformers' router); default 0: dropless"),
    cl::init(0.0), cl::sub(mixtralCommand), cl::cat(modelCategory));
static cl::opt<int64_t> sharedExpertsFlag(
    "shared-experts",
    cl::desc("always-on experts every token passes through beside its top-k, as DeepSeek's "
             "n_shared_experts (one SwiGLU MLP of shared-experts * ffn); default 0: none"),
    cl::init(0), cl::sub(mixtralCommand), cl::cat(modelCategory));

/// The shortest decimal that reads back as `value`, so that the regenerate
/// command on the first line of the output reproduces the model exactly.
static std::string shortest(double value) {
  char text[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

static int fail(const Twine &message) {
  WithColor::error(errs(), "pmlir-gen") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(modelCategory);
  // A model pmlir-gen does not have is refused here: LLVM's parser would
  // name it, then print its help and exit 0 when a model flag follows.
  if (argc > 1 && argv[1][0] != '-') {
    StringRef model(argv[1]);
    if (model != gpt2Command.getName() && model != llamaCommand.getName() &&
        model != mixtralCommand.getName() && model != hfCommand.getName())
      return fail("unknown model '" + model + "' (known: " + gpt2Command.getName() + ", " +
                  llamaCommand.getName() + ", " + mixtralCommand.getName() + "; " +
                  hfCommand.getName() + " DIR reads a Hugging Face config.json)");
  }
  cl::ParseCommandLineOptions(argc, argv, "pmlir model generator\n");

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string command;
  std::optional<pmlir::Gpt2Config> gpt2;
  std::optional<pmlir::LlamaConfig> llama;
  if (gpt2Command) {
    pmlir::Gpt2Config c;
    c.layers = layersFlag;
    c.hidden = hiddenFlag;
    c.heads = headsFlag;
    c.vocab = vocabFlag;
    c.seq = seqFlag;
    c.batch = batchFlag;
    c.maxPositions = maxPositionsFlag;
    // 0 is the config's "4 x hidden", which leaving the flag out says.
    if (gpt2FfnFlag.getNumOccurrences() && gpt2FfnFlag <= 0)
      return fail(formatv("--ffn must be positive, got {0}", gpt2FfnFlag.getValue()));
    c.ffn = gpt2FfnFlag;
    c.layerNormEps = layerNormEpsFlag;
    c.gelu = activationFlag;
    c.tieEmbeddings = !untiedHeadFlag;
    c.loss = lossFlag;
    gpt2 = c;
  } else if (llamaCommand || mixtralCommand) {
    pmlir::LlamaConfig c;
    c.layers = layersFlag;
    c.hidden = hiddenFlag;
    c.heads = headsFlag;
    c.kvHeads = kvHeadsFlag;
    c.ffn = ffnFlag;
    c.vocab = vocabFlag;
    c.seq = seqFlag;
    c.batch = batchFlag;
    c.rmsEps = rmsEpsFlag;
    c.ropeTheta = ropeThetaFlag;
    c.tieEmbeddings = tieEmbeddingsFlag;
    c.maxPositions = llamaMaxPositionsFlag;
    c.attentionBias = attentionBiasFlag;
    c.mlpBias = mlpBiasFlag;
    if (mixtralCommand) {
      // 0 experts would be a dense Llama under Mixtral's name.
      if (expertsFlag <= 0)
        return fail(formatv("--experts must be positive, got {0}", expertsFlag.getValue()));
      c.experts = expertsFlag;
      c.topK = topKFlag;
      c.routerAuxLossCoef = routerAuxLossCoefFlag;
      // The coefficient weighs a term of the loss: without one it would
      // change nothing.
      if (routerAuxLossCoefFlag.getNumOccurrences() && !lossFlag)
        return fail("--router-aux-loss-coef weighs the load-balancing term of the loss: it needs "
                    "--loss");
      c.capacityFactor = capacityFactorFlag;
      c.sharedExperts = sharedExpertsFlag;
    }
    c.loss = lossFlag;
    llama = c;
  } else if (hfCommand) {
    if (pmlir::sameFile(outputFile, hfDirectory) ||
        pmlir::sameFile(outputFile, hfDirectory + "/config.json"))
      return fail("-o " + outputFile + " is the config.json it reads: the model would replace it");
    llvm::Expected<pmlir::HuggingFaceModel> hf =
        pmlir::readHuggingFaceConfig(hfDirectory, seqFlag, batchFlag, lossFlag);
    if (!hf)
      return fail(toString(hf.takeError()));
    if (hf->family == pmlir::HuggingFaceModel::Family::Gpt2)
      gpt2 = hf->gpt2;
    else
      llama = hf->llama;
  } else {
    return fail("expected a model: 'pmlir-gen gpt2 ...', 'pmlir-gen llama ...', "
                "'pmlir-gen mixtral ...' or 'pmlir-gen hf DIR ...' (see --help)");
  }
  if (gpt2) {
    const pmlir::Gpt2Config &c = *gpt2;
    if (Error err = pmlir::validate(c))
      return fail(toString(std::move(err)));
    command = formatv("pmlir-gen gpt2 --layers {0} --hidden {1} --heads {2} "
                      "--vocab {3} --seq {4} --batch {5} --max-positions {6}",
                      c.layers, c.hidden, c.heads, c.vocab, c.seq, c.batch, c.maxPositions);
    if (c.ffn > 0)
      command += formatv(" --ffn {0}", c.ffn).str();
    if (c.layerNormEps != 1e-5)
      command += " --layer-norm-eps " + shortest(c.layerNormEps);
    if (c.gelu == pmlir::tfm::GeluApproximation::erf)
      command += " --activation gelu";
    if (!c.tieEmbeddings)
      command += " --untied-head";
    if (c.loss)
      command += " --loss";
    module = pmlir::buildGpt2(&context, c);
  } else {
    const pmlir::LlamaConfig &c = *llama;
    if (Error err = pmlir::validate(c))
      return fail(toString(std::move(err)));
    command =
        formatv("pmlir-gen {11} --layers {0} --hidden {1} --heads {2} "
                "--kv-heads {3} --ffn {4} --vocab {5} --seq {6} "
                "--batch {7} --rms-eps {8} --rope-theta {9}{10}",
                c.layers, c.hidden, c.heads, c.kvHeads, c.ffn, c.vocab, c.seq, c.batch,
                shortest(c.rmsEps), shortest(c.ropeTheta),
                c.tieEmbeddings ? " --tie-embeddings" : "", c.experts > 0 ? "mixtral" : "llama");
    if (c.experts > 0)
      command += formatv(" --experts {0} --top-k {1}", c.experts, c.topK).str();
    if (c.routerAuxLossCoef > 0)
      command += " --router-aux-loss-coef " + shortest(c.routerAuxLossCoef);
    if (c.capacityFactor > 0)
      command += " --capacity-factor " + shortest(c.capacityFactor);
    if (c.sharedExperts > 0)
      command += formatv(" --shared-experts {0}", c.sharedExperts).str();
    if (c.maxPositions > 0)
      command += formatv(" --max-positions {0}", c.maxPositions).str();
    if (c.attentionBias == pmlir::ProjectionBias::QueryKeyValue)
      command += " --attention-bias qkv";
    if (c.attentionBias == pmlir::ProjectionBias::All)
      command += " --attention-bias all";
    if (c.mlpBias)
      command += " --mlp-bias";
    if (c.loss)
      command += " --loss";
    module = pmlir::buildLlama(&context, c);
  }
  if (locationsFlag)
    command += " --locations";

  if (failed(mlir::verify(*module)))
    return fail("the generated module does not verify");

  std::string text = "// " + command + "\n";
  llvm::raw_string_ostream os(text);
  mlir::OpPrintingFlags flags;
  if (locationsFlag)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(os, flags);
  std::string error;
  if (!pmlir::writeOutputFile(outputFile, text, error))
    return fail(error);
  return 0;
}
