//===- pmlir-gen.cpp - Writes whole transformer models as tfm IR ----------===//
//
// Part of pmlir.
//
//   pmlir-gen gpt2 --layers L --hidden H --heads A --vocab V --seq S
//                  --batch B [--max-positions P] [--loss] -o FILE
//   pmlir-gen llama --layers L --hidden H --heads A --kv-heads K --ffn F
//                   --vocab V --seq S --batch B [--rms-eps E]
//                   [--rope-theta T] [--tie-embeddings] [--loss] -o FILE
//   --locations prints each op's location, its checkpoint prefix ("h.3.attn").
//
// The output starts with a comment holding the command that regenerates it.
// Nothing is written unless the model is valid and verifies.
//
//===----------------------------------------------------------------------===//

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

using namespace llvm;

static cl::SubCommand gpt2Command("gpt2", "GPT-2 (Hugging Face GPT2LMHeadModel, "
                                          "LM head tied to wte)");
static cl::SubCommand llamaCommand("llama",
                                   "Llama (Hugging Face LlamaForCausalLM)");

static cl::OptionCategory modelCategory("Model options");

static cl::opt<int64_t> layersFlag("layers", cl::desc("transformer blocks"),
                               cl::Required, cl::sub(gpt2Command),
                               cl::sub(llamaCommand), cl::cat(modelCategory));
static cl::opt<int64_t> hiddenFlag("hidden", cl::desc("hidden size"), cl::Required,
                               cl::sub(gpt2Command), cl::sub(llamaCommand),
                               cl::cat(modelCategory));
static cl::opt<int64_t> headsFlag("heads", cl::desc("attention (query) heads"),
                              cl::Required, cl::sub(gpt2Command),
                              cl::sub(llamaCommand), cl::cat(modelCategory));
static cl::opt<int64_t> vocabFlag("vocab", cl::desc("vocabulary size"),
                              cl::Required, cl::sub(gpt2Command),
                              cl::sub(llamaCommand), cl::cat(modelCategory));
static cl::opt<int64_t> seqFlag("seq", cl::desc("sequence length"), cl::Required,
                            cl::sub(gpt2Command), cl::sub(llamaCommand),
                            cl::cat(modelCategory));
static cl::opt<int64_t> batchFlag("batch", cl::desc("batch size"), cl::Required,
                              cl::sub(gpt2Command), cl::sub(llamaCommand),
                              cl::cat(modelCategory));
static cl::opt<std::string> outputFile("o", cl::desc("output file ('-' for stdout)"),
                                       cl::value_desc("FILE"), cl::init("-"),
                                       cl::sub(gpt2Command),
                                       cl::sub(llamaCommand),
                                       cl::cat(modelCategory));

static cl::opt<bool> lossFlag(
    "loss",
    cl::desc("@forward also takes 'labels' [batch, seq] (the next tokens; -100 is "
             "ignored) and returns the mean cross entropy instead of the logits"),
    cl::init(false), cl::sub(gpt2Command), cl::sub(llamaCommand), cl::cat(modelCategory));

static cl::opt<bool> locationsFlag(
    "locations",
    cl::desc("print op locations (checkpoint prefixes such as \"h.3.attn\"), "
             "so that diagnostics on the IR name the model part"),
    cl::init(false), cl::sub(gpt2Command), cl::sub(llamaCommand),
    cl::cat(modelCategory));

static cl::opt<int64_t> maxPositionsFlag(
    "max-positions", cl::desc("rows of the position embedding (default: --seq)"),
    cl::init(0), cl::sub(gpt2Command), cl::cat(modelCategory));

static cl::opt<int64_t> kvHeadsFlag("kv-heads", cl::desc("key/value heads"),
                                cl::Required, cl::sub(llamaCommand),
                                cl::cat(modelCategory));
static cl::opt<int64_t> ffnFlag("ffn", cl::desc("MLP intermediate size"),
                            cl::Required, cl::sub(llamaCommand),
                            cl::cat(modelCategory));
static cl::opt<double> rmsEpsFlag("rms-eps", cl::desc("RMSNorm epsilon"),
                              cl::init(1e-6), cl::sub(llamaCommand),
                              cl::cat(modelCategory));
static cl::opt<double> ropeThetaFlag("rope-theta", cl::desc("RoPE base"),
                                 cl::init(10000.0), cl::sub(llamaCommand),
                                 cl::cat(modelCategory));
static cl::opt<bool> tieEmbeddingsFlag(
    "tie-embeddings", cl::desc("LM head shares model.embed_tokens.weight"),
    cl::init(false), cl::sub(llamaCommand), cl::cat(modelCategory));

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
    if (model != gpt2Command.getName() && model != llamaCommand.getName())
      return fail("unknown model '" + model + "' (known: " + gpt2Command.getName() + ", " +
                  llamaCommand.getName() + ")");
  }
  cl::ParseCommandLineOptions(argc, argv, "pmlir model generator\n");

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string command;
  if (gpt2Command) {
    pmlir::Gpt2Config c;
    c.layers = layersFlag;
    c.hidden = hiddenFlag;
    c.heads = headsFlag;
    c.vocab = vocabFlag;
    c.seq = seqFlag;
    c.batch = batchFlag;
    c.maxPositions =
        maxPositionsFlag.getNumOccurrences() ? maxPositionsFlag : seqFlag;
    c.loss = lossFlag;
    if (Error err = pmlir::validate(c))
      return fail(toString(std::move(err)));
    command = formatv("pmlir-gen gpt2 --layers {0} --hidden {1} --heads {2} "
                      "--vocab {3} --seq {4} --batch {5} --max-positions {6}{7}",
                      c.layers, c.hidden, c.heads, c.vocab, c.seq, c.batch,
                      c.maxPositions, c.loss ? " --loss" : "");
    module = pmlir::buildGpt2(&context, c);
  } else if (llamaCommand) {
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
    c.loss = lossFlag;
    if (Error err = pmlir::validate(c))
      return fail(toString(std::move(err)));
    command = formatv("pmlir-gen llama --layers {0} --hidden {1} --heads {2} "
                      "--kv-heads {3} --ffn {4} --vocab {5} --seq {6} "
                      "--batch {7} --rms-eps {8} --rope-theta {9}{10}{11}",
                      c.layers, c.hidden, c.heads, c.kvHeads, c.ffn, c.vocab,
                      c.seq, c.batch, shortest(c.rmsEps),
                      shortest(c.ropeTheta),
                      c.tieEmbeddings ? " --tie-embeddings" : "",
                      c.loss ? " --loss" : "");
    module = pmlir::buildLlama(&context, c);
  } else {
    return fail("expected a model: 'pmlir-gen gpt2 ...' or 'pmlir-gen llama "
                "...' (see --help)");
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
