//===- ModelGenTest.cpp - Model generator and model summary ---------------===//
//
// Part of pmlir.
//
// Parameter counts are checked against the published sizes of real
// checkpoints, an independent account of the weight lists.
//
//===----------------------------------------------------------------------===//

#include "pmlir/ModelGen/ModelGen.h"
#include "pmlir/Analysis/ModelSummary.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace pmlir;

static int64_t parameters(const std::vector<WeightSpec> &weights) {
  int64_t n = 0;
  for (const WeightSpec &w : weights)
    n += w.numElements();
  return n;
}

static std::string errorOf(llvm::Error err) {
  return err ? llvm::toString(std::move(err)) : std::string();
}

TEST(ModelGen, Gpt2SmallHasTheHuggingFaceParameterCount) {
  Gpt2Config c; // defaults are GPT-2 small
  EXPECT_EQ(parameters(gpt2Weights(c)), 124439808);
  EXPECT_EQ(gpt2Weights(c).size(), 2u + 12 * 12 + 2);
}

TEST(ModelGen, Llama2And7BHasTheHuggingFaceParameterCount) {
  LlamaConfig c; // defaults are Llama-2-7B
  EXPECT_EQ(parameters(llamaWeights(c)), 6738415616);
}

TEST(ModelGen, TinyLlamaGqaHasTheHuggingFaceParameterCount) {
  LlamaConfig c;
  c.layers = 22;
  c.hidden = 2048;
  c.heads = 32;
  c.kvHeads = 4;
  c.ffn = 5632;
  EXPECT_EQ(parameters(llamaWeights(c)), 1100048384);
  c.tieEmbeddings = true;
  EXPECT_EQ(parameters(llamaWeights(c)), 1100048384 - 32000 * 2048);
}

TEST(ModelGen, WeightNamesAndLayouts) {
  Gpt2Config g;
  g.layers = 2;
  std::vector<WeightSpec> w = gpt2Weights(g);
  EXPECT_EQ(w[0].name, "wte.weight");
  EXPECT_EQ(w[1].name, "wpe.weight");
  EXPECT_EQ(w[4].name, "h.0.attn.c_attn.weight");
  EXPECT_EQ(w[4].shape, (std::vector<int64_t>{768, 2304})); // Conv1D [in, out]
  EXPECT_EQ(w.back().name, "ln_f.bias");

  LlamaConfig l;
  l.layers = 1;
  l.kvHeads = 8;
  std::vector<WeightSpec> lw = llamaWeights(l);
  EXPECT_EQ(lw[3].name, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(lw[3].shape, (std::vector<int64_t>{1024, 4096})); // Linear [out, in]
  EXPECT_EQ(lw.back().name, "lm_head.weight");
}

TEST(ModelGen, ValidationNamesTheFlagAndTheConstraint) {
  Gpt2Config g;
  EXPECT_EQ(errorOf(validate(g)), "");
  g.hidden = 100;
  EXPECT_EQ(errorOf(validate(g)),
            "--hidden 100 is not divisible by --heads 12 (each head gets "
            "hidden / heads channels)");
  g = Gpt2Config();
  g.layers = 0;
  EXPECT_EQ(errorOf(validate(g)), "--layers must be positive, got 0");
  g = Gpt2Config();
  g.seq = 2048;
  EXPECT_NE(errorOf(validate(g)).find("--seq 2048 exceeds --max-positions 1024"),
            std::string::npos);

  LlamaConfig l;
  EXPECT_EQ(errorOf(validate(l)), "");
  l.kvHeads = 5;
  EXPECT_NE(errorOf(validate(l)).find(
                "--heads 32 is not divisible by --kv-heads 5"),
            std::string::npos);
  l = LlamaConfig();
  l.hidden = 96;
  l.heads = 32; // head dim 3 cannot be rotated by halves
  EXPECT_NE(errorOf(validate(l)).find("must be even"), std::string::npos);
  l = LlamaConfig();
  l.vocab = -3;
  EXPECT_EQ(errorOf(validate(l)), "--vocab must be positive, got -3");
}

TEST(ModelGen, GeneratedModelsVerifyAndSummarize) {
  mlir::MLIRContext context;
  Gpt2Config g;
  g.seq = 128;
  mlir::OwningOpRef<mlir::ModuleOp> gpt2 = buildGpt2(&context, g);
  ASSERT_TRUE(mlir::succeeded(mlir::verify(*gpt2)));
  auto forward = gpt2->lookupSymbol<mlir::func::FuncOp>("forward");
  ASSERT_TRUE(forward);
  ModelSummary s = summarizeModel(forward);
  EXPECT_EQ(s.layers, 12);
  EXPECT_EQ(s.parameters, 124439808);
  EXPECT_EQ(s.weightTensors, 148);
  EXPECT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.opCounts["tfm.attention"], 12);
  EXPECT_EQ(s.opCounts["tfm.matmul"], 12 * 6 + 1);

  LlamaConfig l;
  l.layers = 2;
  l.hidden = 64;
  l.heads = 4;
  l.kvHeads = 2;
  l.ffn = 96;
  l.vocab = 101;
  l.seq = 16;
  mlir::OwningOpRef<mlir::ModuleOp> llama = buildLlama(&context, l);
  ASSERT_TRUE(mlir::succeeded(mlir::verify(*llama)));
  s = summarizeModel(llama->lookupSymbol<mlir::func::FuncOp>("forward"));
  EXPECT_EQ(s.layers, 2);
  EXPECT_EQ(s.opCounts["tfm.rope"], 4);
  // Dense FLOPs: per layer 2*S*H*(Hq*D + 2*Hkv*D + H + 3*F) for the
  // projections and 2 * 2*Hq*S*S*D for attention, plus the LM head.
  double perLayer = 2.0 * 16 * 64 * (64 + 2 * 32 + 64 + 3 * 96) +
                    4.0 * 4 * 16 * 16 * 16;
  EXPECT_DOUBLE_EQ(s.flops, 2 * perLayer + 2.0 * 16 * 64 * 101);
}
