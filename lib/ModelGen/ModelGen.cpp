//===- ModelGen.cpp - Whole transformer models as tfm IR ------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/ModelGen/ModelGen.h"
#include "pmlir/Dialect/Tfm/IR/ShapeUtils.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/ModelGen/HuggingFace.h"
#include "pmlir/Support/ElementCount.h"
#include "pmlir/Support/SafeTensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace pmlir;

int64_t WeightSpec::numElements() const { return ShapedType::getNumElements(shape); }

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

namespace {

/// Collects the first broken constraint, phrased with the names `name`
/// gives each size (pmlir-gen's flags, or a config's fields).
class FlagChecker {
public:
  explicit FlagChecker(SizeNamer name) : name(name) {}

  void positive(llvm::StringRef flag, int64_t value) {
    if (value <= 0)
      fail(llvm::formatv("{0} must be positive, got {1}", name(flag), value));
  }
  void positive(llvm::StringRef flag, double value) {
    if (!(value > 0.0) || !std::isfinite(value)) {
      std::string text;
      llvm::raw_string_ostream(text) << llvm::format("%g", value);
      fail(llvm::formatv("{0} must be a positive finite number, got {1}", name(flag), text));
    }
  }
  void divides(llvm::StringRef divisorFlag, int64_t divisor,
               llvm::StringRef flag, int64_t value, llvm::StringRef why) {
    if (divisor > 0 && value > 0 && value % divisor != 0)
      fail(llvm::formatv("{0} {1} is not divisible by {2} {3} ({4})", name(flag), value,
                         name(divisorFlag), divisor, why));
  }
  /// `flag` is at most `limit`.
  void atMost(llvm::StringRef flag, int64_t value, int64_t limit, llvm::StringRef why) {
    if (value > limit)
      fail(llvm::formatv("{0} {1} exceeds {2} ({3})", name(flag), value, limit, why));
  }
  /// `flag` is no more than `boundFlag`.
  void noMore(llvm::StringRef flag, int64_t value, llvm::StringRef boundFlag, int64_t bound,
              llvm::StringRef why) {
    if (value > 0 && bound > 0 && value > bound)
      fail(llvm::formatv("{0} {1} exceeds {2} {3} ({4})", name(flag), value, name(boundFlag), bound,
                         why));
  }
  /// `weight` of a sparse model's `what` is a finite number, at least 0,
  /// and 0 in a dense one.
  void sparseWeight(llvm::StringRef flag, double value, bool sparse, llvm::StringRef what) {
    if (!(value >= 0) || std::isinf(value) || (!sparse && value != 0))
      fail(llvm::formatv("{0} must be a non-negative {1}, got {2}", name(flag), what, value));
  }
  /// The tensor `what`, of the flags' sizes multiplied, within
  /// kMaxTensorElements elements: past it the program's byte counts (and a
  /// runtime's allocations) would overflow 64 bits.
  void fits(llvm::StringRef what, std::initializer_list<std::pair<llvm::StringRef, int64_t>> dims) {
    static_assert(kMaxTensorElements == int64_t(1) << 48, "the message names the bound");
    llvm::SmallVector<int64_t> sizes;
    std::string product;
    for (auto [flag, size] : dims) {
      if (size <= 0)
        return; // refused as not positive
      product += (product.empty() ? "" : " x ") + name(flag) + " " + std::to_string(size);
      sizes.push_back(size);
    }
    if (!checkedProduct(sizes))
      fail(llvm::formatv("{0} ({1}) has more than 2^48 elements", product, what));
  }
  void fail(std::string message) {
    if (error.empty())
      error = std::move(message);
  }
  llvm::Error take() {
    if (error.empty())
      return llvm::Error::success();
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  }
  SizeNamer name;

private:
  std::string error;
};

/// Why the layers are bounded.
constexpr const char *kLayersBound =
    "pmlir-gen builds one tfm.layer a layer, and no model has so many";

} // namespace

std::string pmlir::flagName(llvm::StringRef flag) { return "--" + flag.str(); }

llvm::Error pmlir::validate(const Gpt2Config &c, SizeNamer name) {
  FlagChecker check(name);
  check.positive("layers", c.layers);
  check.atMost("layers", c.layers, kMaxLayers, kLayersBound);
  check.positive("hidden", c.hidden);
  check.positive("heads", c.heads);
  check.positive("vocab", c.vocab);
  check.positive("seq", c.seq);
  check.positive("batch", c.batch);
  check.positive("max-positions", c.maxPositions);
  check.positive("layer-norm-eps", c.layerNormEps);
  if (c.ffn < 0)
    check.positive("ffn", c.ffn);
  check.divides("heads", c.heads, "hidden", c.hidden,
                "each head gets hidden / heads channels");
  check.noMore("seq", c.seq, "max-positions", c.maxPositions,
               "the rows of the position embedding wpe");
  check.fits("the token embedding wte", {{"vocab", c.vocab}, {"hidden", c.hidden}});
  check.fits("the position embedding wpe",
             {{"max-positions", c.maxPositions}, {"hidden", c.hidden}});
  if (c.ffn > 0)
    check.fits("the MLP's weight", {{"hidden", c.hidden}, {"ffn", c.ffn}});
  else // 4 x hidden wide
    check.fits("the MLP's weight, a quarter of it", {{"hidden", c.hidden}, {"hidden", c.hidden}});
  check.fits("the logits", {{"batch", c.batch}, {"seq", c.seq}, {"vocab", c.vocab}});
  check.fits("the attention probabilities",
             {{"batch", c.batch}, {"heads", c.heads}, {"seq", c.seq}, {"seq", c.seq}});
  return check.take();
}

llvm::Error pmlir::validate(const LlamaConfig &c, SizeNamer name) {
  FlagChecker check(name);
  check.positive("layers", c.layers);
  check.atMost("layers", c.layers, kMaxLayers, kLayersBound);
  check.positive("hidden", c.hidden);
  check.positive("heads", c.heads);
  check.positive("kv-heads", c.kvHeads);
  check.positive("ffn", c.ffn);
  check.positive("vocab", c.vocab);
  check.positive("seq", c.seq);
  check.positive("batch", c.batch);
  check.positive("rms-eps", c.rmsEps);
  check.positive("rope-theta", c.ropeTheta);
  check.divides("heads", c.heads, "hidden", c.hidden,
                "each head gets hidden / heads channels");
  if (c.maxPositions < 0)
    check.positive("max-positions", c.maxPositions);
  check.noMore("seq", c.seq, "max-positions", c.maxPositions,
               "the positions the model was trained for");
  check.divides("kv-heads", c.kvHeads, "heads", c.heads,
                "grouped-query attention shares each key/value head among "
                "heads / kv-heads query heads");
  if (c.experts < 0)
    check.positive("experts", c.experts);
  if (c.experts > 0) {
    check.positive("top-k", c.topK);
    check.noMore("top-k", c.topK, "experts", c.experts,
                 "each token goes to top-k distinct experts");
    if (c.mlpBias)
      check.fail(name("mlp-bias") + ": Mixtral's experts have no biases");
  }
  if (c.sharedExperts < 0 || (c.experts == 0 && c.sharedExperts != 0))
    check.fail(llvm::formatv("{0} must be a non-negative count of a sparse model's "
                             "always-on experts, got {1}",
                             name("shared-experts"), c.sharedExperts));
  check.sparseWeight("router-aux-loss-coef", c.routerAuxLossCoef, c.experts > 0,
                     "weight of a sparse model's load-balancing loss");
  check.sparseWeight("capacity-factor", c.capacityFactor, c.experts > 0,
                     "factor of a sparse model's expert capacity (0: dropless)");
  if (c.hidden > 0 && c.heads > 0 && c.hidden % c.heads == 0 &&
      (c.hidden / c.heads) % 2 != 0)
    check.fail(llvm::formatv("{0} {1} / {2} {3} = {4} must be even "
                             "(rotary embeddings rotate half of each head)",
                             name("hidden"), c.hidden, name("heads"), c.heads, c.hidden / c.heads));
  check.fits("the token embedding", {{"vocab", c.vocab}, {"hidden", c.hidden}});
  check.fits("the MLP's weight", {{"hidden", c.hidden}, {"ffn", c.ffn}});
  check.fits("the shared experts' weight",
             {{"shared-experts", std::max<int64_t>(1, c.sharedExperts)},
              {"ffn", c.ffn},
              {"hidden", c.hidden}});
  check.fits("an expert's weights",
             {{"experts", std::max<int64_t>(1, c.experts)}, {"hidden", c.hidden}, {"ffn", c.ffn}});
  check.fits("the logits", {{"batch", c.batch}, {"seq", c.seq}, {"vocab", c.vocab}});
  check.fits("the attention probabilities",
             {{"batch", c.batch}, {"heads", c.heads}, {"seq", c.seq}, {"seq", c.seq}});
  return check.take();
}

//===----------------------------------------------------------------------===//
// Weight lists
//===----------------------------------------------------------------------===//

std::vector<WeightSpec> pmlir::gpt2Weights(const Gpt2Config &c) {
  int64_t h = c.hidden;
  std::vector<WeightSpec> w = {
      {"wte.weight", {c.vocab, h}, {"vocab", "hidden"}},
      {"wpe.weight", {c.maxPositions, h}, {"position", "hidden"}},
  };
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "h." + std::to_string(i) + ".";
    // Conv1D weights are stored [in, out].
    std::vector<WeightSpec> layer = {
        {p + "ln_1.weight", {h}, {"hidden"}},
        {p + "ln_1.bias", {h}, {"hidden"}},
        {p + "attn.c_attn.weight", {h, 3 * h}, {"in", "out"}},
        {p + "attn.c_attn.bias", {3 * h}, {"out"}},
        {p + "attn.c_proj.weight", {h, h}, {"in", "out"}},
        {p + "attn.c_proj.bias", {h}, {"out"}},
        {p + "ln_2.weight", {h}, {"hidden"}},
        {p + "ln_2.bias", {h}, {"hidden"}},
        {p + "mlp.c_fc.weight", {h, c.inner()}, {"in", "out"}},
        {p + "mlp.c_fc.bias", {c.inner()}, {"out"}},
        {p + "mlp.c_proj.weight", {c.inner(), h}, {"in", "out"}},
        {p + "mlp.c_proj.bias", {h}, {"out"}},
    };
    w.insert(w.end(), layer.begin(), layer.end());
  }
  w.push_back({"ln_f.weight", {h}, {"hidden"}});
  w.push_back({"ln_f.bias", {h}, {"hidden"}});
  if (!c.tieEmbeddings)
    w.push_back({"lm_head.weight", {c.vocab, h}, {"vocab", "hidden"}});
  return w;
}

std::vector<WeightSpec> pmlir::llamaWeights(const LlamaConfig &c) {
  int64_t h = c.hidden, d = c.hidden / c.heads;
  std::vector<WeightSpec> w = {
      {"model.embed_tokens.weight", {c.vocab, h}, {"vocab", "hidden"}}};
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    // Linear weights are stored [out, in].
    std::vector<WeightSpec> layer = {
        {p + "input_layernorm.weight", {h}, {"hidden"}},
        {p + "self_attn.q_proj.weight", {c.heads * d, h}, {"out", "in"}},
        {p + "self_attn.k_proj.weight", {c.kvHeads * d, h}, {"out", "in"}},
        {p + "self_attn.v_proj.weight", {c.kvHeads * d, h}, {"out", "in"}},
        {p + "self_attn.o_proj.weight", {h, c.heads * d}, {"out", "in"}},
        {p + "post_attention_layernorm.weight", {h}, {"hidden"}},
    };
    if (c.experts > 0) {
      // Mixtral's router and experts; each expert's w1 (gate), w3 (up) and
      // w2 (down) stacked into one tensor, as the grouped matmul reads
      // them, under the per-expert name with the index as kStackIndex.
      std::string moe = p + "block_sparse_moe.";
      auto experts = [&](llvm::StringRef w) {
        return moe + "experts." + std::string(1, kStackIndex) + "." + w.str() + ".weight";
      };
      layer.push_back({moe + "gate.weight", {c.experts, h}, {"expert", "in"}});
      layer.push_back({experts("w1"), {c.experts, c.ffn, h}, {"expert", "out", "in"}});
      layer.push_back({experts("w3"), {c.experts, c.ffn, h}, {"expert", "out", "in"}});
      layer.push_back({experts("w2"), {c.experts, h, c.ffn}, {"expert", "out", "in"}});
      // DeepSeek's shared experts: one MLP as wide as all of them.
      if (int64_t shared = c.sharedExperts * c.ffn) {
        layer.push_back({moe + "shared_experts.w1.weight", {shared, h}, {"out", "in"}});
        layer.push_back({moe + "shared_experts.w3.weight", {shared, h}, {"out", "in"}});
        layer.push_back({moe + "shared_experts.w2.weight", {h, shared}, {"out", "in"}});
      }
    } else {
      layer.push_back({p + "mlp.gate_proj.weight", {c.ffn, h}, {"out", "in"}});
      layer.push_back({p + "mlp.up_proj.weight", {c.ffn, h}, {"out", "in"}});
      layer.push_back({p + "mlp.down_proj.weight", {h, c.ffn}, {"out", "in"}});
    }
    if (c.attentionBias != ProjectionBias::None) {
      layer.push_back({p + "self_attn.q_proj.bias", {c.heads * d}, {"out"}});
      layer.push_back({p + "self_attn.k_proj.bias", {c.kvHeads * d}, {"out"}});
      layer.push_back({p + "self_attn.v_proj.bias", {c.kvHeads * d}, {"out"}});
    }
    if (c.attentionBias == ProjectionBias::All)
      layer.push_back({p + "self_attn.o_proj.bias", {h}, {"out"}});
    if (c.mlpBias) {
      layer.push_back({p + "mlp.gate_proj.bias", {c.ffn}, {"out"}});
      layer.push_back({p + "mlp.up_proj.bias", {c.ffn}, {"out"}});
      layer.push_back({p + "mlp.down_proj.bias", {h}, {"out"}});
    }
    w.insert(w.end(), layer.begin(), layer.end());
  }
  w.push_back({"model.norm.weight", {h}, {"hidden"}});
  if (!c.tieEmbeddings)
    w.push_back({"lm_head.weight", {c.vocab, h}, {"vocab", "hidden"}});
  return w;
}

//===----------------------------------------------------------------------===//
// IR construction
//===----------------------------------------------------------------------===//

namespace {

/// Creates @forward with the ids and weights as named arguments and offers
/// shape-inferring helpers for the ops the model bodies use. Ops are located
/// at the checkpoint prefix of the module they belong to ("h.3.attn"), so a
/// diagnostic on generated IR points at the model part.
class ForwardBuilder {
public:
  ForwardBuilder(MLIRContext *ctx, int64_t batch, int64_t seq, int64_t vocab,
                 const std::vector<WeightSpec> &weights, bool loss)
      : b(ctx), f32(b.getF32Type()) {
    module = ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());

    auto tokens = RankedTensorType::get({batch, seq}, b.getI64Type());
    SmallVector<Type> argTypes = {tokens};
    SmallVector<Attribute> argAttrs = {
        argAttr("input_ids", {"batch", "seq"}, tfm::ArgumentRole::Input)};
    if (loss) {
      argTypes.push_back(tokens);
      argAttrs.push_back(argAttr("labels", {"batch", "seq"}, tfm::ArgumentRole::Label));
    }
    for (const WeightSpec &w : weights) {
      argTypes.push_back(RankedTensorType::get(w.shape, f32));
      argAttrs.push_back(argAttr(w.name, w.dims, tfm::ArgumentRole::Param));
    }
    Type resultType = loss ? RankedTensorType::get({}, f32)
                           : RankedTensorType::get({batch, seq, vocab}, f32);
    auto type = b.getFunctionType(argTypes, {resultType});
    func = func::FuncOp::create(b, loc("forward"), "forward", type);
    func.setAllArgAttrs(argAttrs);
    // pmlir-run names its output by this ("logits" without it).
    if (loss)
      func.setResultAttr(0, tfm::kNameAttr, b.getStringAttr("loss"));
    Block *entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
    ids = entry->getArgument(0);
    if (loss)
      labels = entry->getArgument(1);
    for (auto [w, arg] : llvm::zip(weights, entry->getArguments().drop_front(loss ? 2 : 1)))
      byName[w.name] = arg;
  }

  OpBuilder b;
  Type f32;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  Value ids, labels;
  Location here = UnknownLoc::get(b.getContext());

  Value weight(const std::string &name) const {
    auto it = byName.find(name);
    assert(it != byName.end() && "weight not declared");
    return it->second;
  }
  Location loc(llvm::StringRef name) {
    return NameLoc::get(b.getStringAttr(name));
  }

  static llvm::ArrayRef<int64_t> shape(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }
  RankedTensorType tensor(llvm::ArrayRef<int64_t> s, Type elt = {}) {
    return RankedTensorType::get(s, elt ? elt : f32);
  }

  Value embedding(Value table, Value indices) {
    tfm::Shape s(shape(indices));
    s.push_back(shape(table)[1]);
    return tfm::EmbeddingOp::create(b, here, tensor(s), table, indices,
                                    /*row_offset=*/Value());
  }
  Value arange(int64_t n) {
    return tfm::ArangeOp::create(b, here, tensor({n}, b.getI64Type()),
                                 b.getI64IntegerAttr(0), /*offset=*/Value(),
                                 /*head_tail=*/tfm::HeadTailAttr());
  }
  Value matmul(Value x, Value w, bool transposeRhs = false) {
    std::string error;
    std::optional<tfm::Shape> s =
        tfm::inferMatmulShape(shape(x), shape(w), false, transposeRhs, error);
    assert(s && "generator built an ill-shaped matmul");
    return tfm::MatmulOp::create(b, here, tensor(*s), x, w, false, transposeRhs);
  }
  Value add(Value x, Value y) { return tfm::AddOp::create(b, here, x, y); }
  Value mul(Value x, Value y) { return tfm::MulOp::create(b, here, x, y); }
  Value layerNorm(Value x, Value g, Value beta, double eps) {
    return tfm::LayerNormOp::create(b, here, x, g, beta,
                                    b.getF64FloatAttr(eps));
  }
  Value rmsNorm(Value x, Value g, double eps) {
    return tfm::RmsNormOp::create(b, here, x, g, b.getF64FloatAttr(eps));
  }
  Value splitHeads(Value x, int64_t heads) {
    llvm::ArrayRef<int64_t> s = shape(x);
    return tfm::SplitHeadsOp::create(b, here,
                                     tensor({s[0], heads, s[1], s[2] / heads}),
                                     x, b.getI64IntegerAttr(heads));
  }
  Value mergeHeads(Value x) {
    llvm::ArrayRef<int64_t> s = shape(x);
    return tfm::MergeHeadsOp::create(b, here, tensor({s[0], s[2], s[1] * s[3]}),
                                     x);
  }
  Value attention(Value q, Value k, Value v) {
    double scale = 1.0 / std::sqrt(static_cast<double>(shape(q)[3]));
    return tfm::AttentionOp::create(b, here, q.getType(), /*probabilities=*/Type(), q, k, v,
                                    /*causal=*/b.getUnitAttr(), b.getF64FloatAttr(scale),
                                    /*query_offset=*/Value(), /*head_tail=*/tfm::HeadTailAttr())
        .getResult();
  }
  Value rope(Value x, Value positions, double theta) {
    return tfm::RopeOp::create(b, here, x, positions, b.getF64FloatAttr(theta));
  }
  SmallVector<Value> split(Value x, int64_t dim, int64_t parts) {
    tfm::Shape s(shape(x));
    s[dim] /= parts;
    SmallVector<Type> types(parts, tensor(s));
    auto op = tfm::SplitOp::create(b, here, types, x, b.getI64IntegerAttr(dim));
    return SmallVector<Value>(op.getResults());
  }

  /// Mixtral's sparse MLP of `x` [B, S, H] in layer `layer`: the router
  /// (`gate` [E, H]), each token's top-k experts, and the SwiGLU experts
  /// (`w1`, `w3` [E, F, H], `w2` [E, H, F]) whose results are weighted back
  /// per token. With a `capacity`, an expert takes at most that many of a
  /// sequence's choices and the rest are dropped. How many tokens each
  /// expert got, and how many it dropped, is reported after each step.
  Value sparseMlp(int64_t layer, Value x, Value gate, Value w1, Value w3, Value w2, int64_t topK,
                  std::optional<int64_t> capacity, Value *routerStats = nullptr) {
    llvm::ArrayRef<int64_t> s = shape(x);
    int64_t experts = shape(gate)[0];
    Value logits = matmul(x, gate, /*transposeRhs=*/true);
    auto route = tfm::MoeRouteOp::create(b, here, tensor({s[0], s[1], topK}),
                                         tensor({s[0], s[1], topK}, b.getI64Type()), logits,
                                         b.getI64IntegerAttr(topK), b.getUnitAttr());
    if (routerStats)
      *routerStats =
          tfm::MoeRouterStatsOp::create(b, here, tensor({2, experts}), logits, route.getExperts());
    Value counts = tfm::MoeExpertCountsOp::create(b, here, tensor({experts}, b.getI64Type()),
                                                  route.getExperts(), b.getI64IntegerAttr(experts),
                                                  IntegerAttr(), tfm::HeadTailAttr());
    tfm::StepMetricOp::create(b, here, counts, tfm::StepMetricKind::ExpertTokens, layer);
    Value weights = route.getWeights();
    if (capacity) {
      weights = tfm::MoeCapacityOp::create(b, here, weights.getType(), weights, route.getExperts(),
                                           b.getI64IntegerAttr(*capacity),
                                           b.getI64IntegerAttr(experts), tfm::HeadTailAttr());
      Value dropped = tfm::MoeExpertCountsOp::create(
          b, here, tensor({experts}, b.getI64Type()), route.getExperts(),
          b.getI64IntegerAttr(experts), b.getI64IntegerAttr(*capacity), tfm::HeadTailAttr());
      tfm::StepMetricOp::create(b, here, dropped, tfm::StepMetricKind::DroppedTokens, layer);
    }
    return tfm::MoeExpertsOp::create(b, here, x.getType(), x, route.getExperts(), weights, w1, w3,
                                     w2);
  }

  /// Builds one transformer block inside a tfm.layer and returns its output.
  Value layer(int64_t index, Value input,
              llvm::function_ref<Value(Value)> body) {
    return layer(index, ValueRange{input},
                 [&](ValueRange in) -> SmallVector<Value> { return {body(in[0])}; })[0];
  }
  /// A block that carries several values (the residual stream and the
  /// routers' statistics) from layer to layer.
  SmallVector<Value> layer(int64_t index, ValueRange inputs,
                           llvm::function_ref<SmallVector<Value>(ValueRange)> body) {
    auto op =
        tfm::LayerOp::create(b, here, inputs.getTypes(), b.getI64IntegerAttr(index), UnitAttr());
    Block *block = b.createBlock(&op.getBody());
    b.setInsertionPointToStart(block);
    SmallVector<Value> out = body(inputs);
    tfm::YieldOp::create(b, here, out);
    b.setInsertionPointAfter(op);
    return SmallVector<Value>(op.getResults());
  }

  /// Returns the logits, or their loss against the labels, in the module
  /// that keeps the model's Hugging Face `config`.
  /// With `auxLoss`, the loss is the cross entropy plus it.
  OwningOpRef<ModuleOp> finish(Value logits, const std::string &config, Value auxLoss = {}) {
    // A model no class of transformers holds has none (--export-hf then
    // refuses it: the model has no Hugging Face config).
    if (!config.empty())
      (*module)->setAttr(tfm::kHuggingFaceConfigAttr,
                         huggingFaceConfigAttr(b.getContext(), config));
    Value result = logits;
    if (labels)
      result = tfm::CrossEntropyOp::create(b, loc("loss"), tensor({}), logits, labels,
                                           b.getI64IntegerAttr(-100));
    if (labels && auxLoss)
      result = tfm::AddOp::create(b, loc("loss"), result, auxLoss);
    func::ReturnOp::create(b, loc("forward"), result);
    return std::move(module);
  }

private:
  DictionaryAttr argAttr(llvm::StringRef name, llvm::ArrayRef<std::string> dims,
                         tfm::ArgumentRole role) {
    SmallVector<Attribute> dimAttrs;
    for (const std::string &d : dims)
      dimAttrs.push_back(b.getStringAttr(d));
    return b.getDictionaryAttr(
        {b.getNamedAttr(tfm::kNameAttr, b.getStringAttr(name)),
         b.getNamedAttr(tfm::kDimsAttr, b.getArrayAttr(dimAttrs)),
         b.getNamedAttr(tfm::kRoleAttr, tfm::ArgumentRoleAttr::get(b.getContext(), role))});
  }

  llvm::StringMap<Value> byName;
};

} // namespace

OwningOpRef<ModuleOp> pmlir::buildGpt2(MLIRContext *ctx, const Gpt2Config &c) {
  ctx->loadDialect<tfm::TfmDialect, func::FuncDialect>();
  ForwardBuilder fb(ctx, c.batch, c.seq, c.vocab, gpt2Weights(c), c.loss);
  double eps = c.layerNormEps;

  fb.here = fb.loc("wte");
  Value tokens = fb.embedding(fb.weight("wte.weight"), fb.ids);
  fb.here = fb.loc("wpe");
  Value positions = fb.embedding(fb.weight("wpe.weight"), fb.arange(c.seq));
  Value hidden = fb.add(tokens, positions);

  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "h." + std::to_string(i) + ".";
    auto w = [&](llvm::StringRef name) { return fb.weight(p + name.str()); };
    fb.here = fb.loc(p.substr(0, p.size() - 1));
    hidden = fb.layer(i, hidden, [&](Value residual) {
      fb.here = fb.loc(p + "ln_1");
      Value x = fb.layerNorm(residual, w("ln_1.weight"), w("ln_1.bias"), eps);
      // c_attn holds [W_q | W_k | W_v]; one matmul per projection keeps each
      // a plain column-parallel candidate.
      fb.here = fb.loc(p + "attn");
      SmallVector<Value> qkvW = fb.split(w("attn.c_attn.weight"), 1, 3);
      SmallVector<Value> qkvB = fb.split(w("attn.c_attn.bias"), 0, 3);
      Value heads[3];
      for (int j = 0; j < 3; ++j)
        heads[j] = fb.splitHeads(fb.add(fb.matmul(x, qkvW[j]), qkvB[j]), c.heads);
      Value attn = fb.mergeHeads(fb.attention(heads[0], heads[1], heads[2]));
      attn = fb.add(fb.matmul(attn, w("attn.c_proj.weight")),
                    w("attn.c_proj.bias"));
      residual = fb.add(residual, attn);

      fb.here = fb.loc(p + "ln_2");
      x = fb.layerNorm(residual, w("ln_2.weight"), w("ln_2.bias"), eps);
      fb.here = fb.loc(p + "mlp");
      Value up = fb.add(fb.matmul(x, w("mlp.c_fc.weight")), w("mlp.c_fc.bias"));
      up = tfm::GeluOp::create(fb.b, fb.here, up, c.gelu);
      Value down = fb.add(fb.matmul(up, w("mlp.c_proj.weight")),
                          w("mlp.c_proj.bias"));
      return fb.add(residual, down);
    });
  }

  fb.here = fb.loc("ln_f");
  hidden = fb.layerNorm(hidden, fb.weight("ln_f.weight"),
                        fb.weight("ln_f.bias"), eps);
  fb.here = fb.loc("lm_head");
  Value head = fb.weight(c.tieEmbeddings ? "wte.weight" : "lm_head.weight");
  return fb.finish(fb.matmul(hidden, head, /*transposeRhs=*/true), huggingFaceConfig(c));
}

OwningOpRef<ModuleOp> pmlir::buildLlama(MLIRContext *ctx, const LlamaConfig &c) {
  ctx->loadDialect<tfm::TfmDialect, func::FuncDialect>();
  ForwardBuilder fb(ctx, c.batch, c.seq, c.vocab, llamaWeights(c), c.loss);

  fb.here = fb.loc("model.embed_tokens");
  Value hidden = fb.embedding(fb.weight("model.embed_tokens.weight"), fb.ids);
  Value positions = fb.arange(c.seq);

  // The routers' statistics for the load-balancing loss, summed from
  // layer to layer beside the residual stream.
  bool balance = c.experts > 0 && c.routerAuxLossCoef > 0 && c.loss;
  Value routerStats;
  if (balance) {
    fb.here = fb.loc("router_stats");
    routerStats =
        tfm::FillOp::create(fb.b, fb.here, fb.tensor({2, c.experts}), fb.b.getF64FloatAttr(0.0));
  }

  // Each expert's places in a sequence: ceil(F * S * k / E), at most the
  // S * k a sequence has (which drops nothing).
  std::optional<int64_t> capacity;
  if (c.experts > 0 && c.capacityFactor > 0) {
    double choices = static_cast<double>(c.seq * c.topK);
    capacity = static_cast<int64_t>(
        std::min(std::ceil(c.capacityFactor * choices / static_cast<double>(c.experts)), choices));
  }
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "model.layers." + std::to_string(i) + ".";
    auto w = [&](llvm::StringRef name) { return fb.weight(p + name.str()); };
    fb.here = fb.loc(p.substr(0, p.size() - 1));
    SmallVector<Value> carried = {hidden};
    if (balance)
      carried.push_back(routerStats);
    carried = fb.layer(i, carried, [&](ValueRange in) -> SmallVector<Value> {
      Value residual = in[0];
      fb.here = fb.loc(p + "input_layernorm");
      Value x = fb.rmsNorm(residual, w("input_layernorm.weight"), c.rmsEps);
      fb.here = fb.loc(p + "self_attn");
      // Linear weights are [out, in]: x @ W^T (+ b).
      auto linear = [&](Value in, llvm::StringRef proj, bool bias) {
        Value out = fb.matmul(in, w((proj + ".weight").str()), true);
        return bias ? fb.add(out, w((proj + ".bias").str())) : out;
      };
      bool qkvBias = c.attentionBias != ProjectionBias::None;
      Value q = fb.splitHeads(linear(x, "self_attn.q_proj", qkvBias), c.heads);
      Value k = fb.splitHeads(linear(x, "self_attn.k_proj", qkvBias), c.kvHeads);
      Value v = fb.splitHeads(linear(x, "self_attn.v_proj", qkvBias), c.kvHeads);
      q = fb.rope(q, positions, c.ropeTheta);
      k = fb.rope(k, positions, c.ropeTheta);
      Value attn = fb.mergeHeads(fb.attention(q, k, v));
      residual = fb.add(residual,
                        linear(attn, "self_attn.o_proj", c.attentionBias == ProjectionBias::All));

      fb.here = fb.loc(p + "post_attention_layernorm");
      x = fb.rmsNorm(residual, w("post_attention_layernorm.weight"), c.rmsEps);
      // SwiGLU: down(silu(gate(x)) * up(x)).
      auto swiglu = [&](llvm::StringRef gateProj, llvm::StringRef upProj,
                        llvm::StringRef downProj) {
        Value gate = tfm::SiluOp::create(fb.b, fb.here, linear(x, gateProj, c.mlpBias));
        Value up = linear(x, upProj, c.mlpBias);
        return linear(fb.mul(gate, up), downProj, c.mlpBias);
      };
      if (c.experts > 0) {
        fb.here = fb.loc(p + "block_sparse_moe");
        std::string stack(1, kStackIndex);
        Value stats;
        Value sparse = fb.sparseMlp(i, x, w("block_sparse_moe.gate.weight"),
                                    w("block_sparse_moe.experts." + stack + ".w1.weight"),
                                    w("block_sparse_moe.experts." + stack + ".w3.weight"),
                                    w("block_sparse_moe.experts." + stack + ".w2.weight"), c.topK,
                                    capacity, balance ? &stats : nullptr);
        if (c.sharedExperts > 0) {
          fb.here = fb.loc(p + "block_sparse_moe.shared_experts");
          sparse = fb.add(sparse, swiglu("block_sparse_moe.shared_experts.w1",
                                         "block_sparse_moe.shared_experts.w3",
                                         "block_sparse_moe.shared_experts.w2"));
        }
        SmallVector<Value> out = {fb.add(residual, sparse)};
        if (balance)
          out.push_back(fb.add(in[1], stats));
        return out;
      }
      fb.here = fb.loc(p + "mlp");
      return {fb.add(residual, swiglu("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"))};
    });
    hidden = carried[0];
    if (balance)
      routerStats = carried[1];
  }

  fb.here = fb.loc("model.norm");
  hidden = fb.rmsNorm(hidden, fb.weight("model.norm.weight"), c.rmsEps);
  fb.here = fb.loc("lm_head");
  Value head = fb.weight(c.tieEmbeddings ? "model.embed_tokens.weight"
                                         : "lm_head.weight");
  Value logits = fb.matmul(hidden, head, /*transposeRhs=*/true);
  Value auxLoss;
  if (balance) {
    // Hugging Face's load_balancing_loss_func over every layer's router:
    // E * sum_e (choices of e / (L T)) * (probability sum of e / (L T)).
    fb.here = fb.loc("router_aux_loss");
    double tokens = static_cast<double>(c.layers) * static_cast<double>(c.batch * c.seq);
    double scale = c.routerAuxLossCoef * static_cast<double>(c.experts) / (tokens * tokens);
    auxLoss = tfm::MoeBalanceLossOp::create(fb.b, fb.here, fb.tensor({}), routerStats,
                                            fb.b.getF64FloatAttr(scale));
  }
  return fb.finish(logits, huggingFaceConfig(c), auxLoss);
}
