//===- HuggingFace.cpp - Models from Hugging Face config.json -------------===//
//
// Part of pmlir.
//
// Defaults are those of transformers' own config classes (GPT2Config,
// LlamaConfig, MistralConfig, Qwen2Config, MixtralConfig) for a field the
// file leaves out, and a field a family's model does not read
// (attention_bias of a Mistral) is read past as transformers reads past it.
// Fields that only shape training regularization (dropout) or the numerics
// of transformers' own kernels (reorder_and_upcast_attn, pretraining_tp)
// do not change the model and are read past; pmlir trains without dropout.
//
//===----------------------------------------------------------------------===//

#include "pmlir/ModelGen/HuggingFace.h"
#include "pmlir/Support/Nesting.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>

using namespace pmlir;
using json = nlohmann::json;

namespace {

/// A config.json holds one flat object with a few nested ones.
constexpr size_t kMaxConfigNesting = 16;

/// Reads fields of one config.json, each error naming the file and field.
class ConfigReader {
public:
  ConfigReader(std::string path, const json &config) : path(std::move(path)), config(config) {}

  /// A positive integer field, `fallback` (when >= 0) where it is absent.
  int64_t positive(const char *field, int64_t fallback = -1) {
    auto it = config.find(field);
    if (it == config.end() || it->is_null()) {
      if (fallback < 0)
        fail(llvm::formatv("has no '{0}'", field).str());
      return fallback;
    }
    if (!it->is_number_integer() || it->get<int64_t>() <= 0) {
      fail(llvm::formatv("'{0}' is {1}, not a positive integer", field, it->dump()).str());
      return 1;
    }
    return it->get<int64_t>();
  }
  double number(const char *field, double fallback) {
    auto it = config.find(field);
    if (it == config.end() || it->is_null())
      return fallback;
    if (!it->is_number() || !(it->get<double>() > 0)) {
      fail(llvm::formatv("'{0}' is {1}, not a positive number", field, it->dump()).str());
      return fallback;
    }
    return it->get<double>();
  }
  double nonNegative(const char *field, double fallback) {
    auto it = config.find(field);
    if (it == config.end() || it->is_null())
      return fallback;
    if (!it->is_number() || !(it->get<double>() >= 0)) {
      fail(llvm::formatv("'{0}' is {1}, not a non-negative number", field, it->dump()).str());
      return fallback;
    }
    return it->get<double>();
  }
  bool flag(const char *field, bool fallback) {
    auto it = config.find(field);
    if (it == config.end() || it->is_null())
      return fallback;
    if (!it->is_boolean()) {
      fail(llvm::formatv("'{0}' is {1}, not true or false", field, it->dump()).str());
      return fallback;
    }
    return it->get<bool>();
  }
  std::string text(const char *field, const char *fallback) {
    auto it = config.find(field);
    if (it == config.end() || it->is_null())
      return fallback;
    if (!it->is_string()) {
      fail(llvm::formatv("'{0}' is {1}, not a string", field, it->dump()).str());
      return fallback;
    }
    return it->get<std::string>();
  }
  /// The field's value as written, or "" when absent or null.
  std::string raw(const char *field) const {
    auto it = config.find(field);
    return it == config.end() || it->is_null() ? "" : it->dump();
  }
  /// `field` holds something the model pmlir builds does not do.
  void refuse(const char *field, const std::string &why) {
    fail(llvm::formatv("'{0}' is {1}: {2}", field, raw(field), why).str());
  }
  void fail(const std::string &message) { adopt(path + ": " + message); }
  /// A whole message (a nested reader's).
  void adopt(const std::string &message) {
    if (error.empty())
      error = message;
  }
  llvm::Error take() {
    if (error.empty())
      return llvm::Error::success();
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  }

private:
  std::string path;
  const json &config;
  std::string error;
};

void readGpt2(ConfigReader &r, Gpt2Config &c) {
  c.layers = r.positive("n_layer");
  c.hidden = r.positive("n_embd");
  c.heads = r.positive("n_head");
  c.vocab = r.positive("vocab_size");
  c.maxPositions = r.positive("n_positions", 1024);
  c.ffn = r.raw("n_inner").empty() ? 0 : r.positive("n_inner");
  c.layerNormEps = r.number("layer_norm_epsilon", 1e-5);
  c.tieEmbeddings = r.flag("tie_word_embeddings", true);
  std::string activation = r.text("activation_function", "gelu_new");
  if (activation == "gelu_new" || activation == "gelu_pytorch_tanh")
    c.gelu = tfm::GeluApproximation::tanh;
  else if (activation == "gelu")
    c.gelu = tfm::GeluApproximation::erf;
  else
    r.refuse("activation_function", "pmlir's GPT-2 MLP has gelu_new, gelu_pytorch_tanh (the "
                                    "tanh GELU) and gelu (erf)");
  if (!r.flag("scale_attn_weights", true))
    r.refuse("scale_attn_weights", "pmlir's attention scales by 1 / sqrt(head size)");
  if (r.flag("scale_attn_by_inverse_layer_idx", false))
    r.refuse("scale_attn_by_inverse_layer_idx",
             "pmlir's attention does not scale by the layer index");
  if (r.flag("add_cross_attention", false))
    r.refuse("add_cross_attention", "pmlir's GPT-2 is a decoder without cross attention");
}

/// What transformers' config class of a Llama-like family takes for a
/// field the file leaves out, and which of LlamaConfig's options its model
/// reads (MistralConfig and the others ignore attention_bias and mlp_bias:
/// their projections never have biases, or always, as Qwen2's q, k and v).
struct LlamaFamily {
  /// num_key_value_heads when absent (0: num_attention_heads, as null is).
  int64_t kvHeads;
  int64_t maxPositions;
  double rmsEps;
  double ropeTheta;
  /// sliding_window when absent (0: none).
  int64_t slidingWindow;
  bool readsProjectionBias;
};

LlamaFamily llamaFamily(const std::string &type) {
  if (type == "mistral")
    return {8, 131072, 1e-6, 10000.0, 4096, false};
  if (type == "mixtral")
    return {8, 131072, 1e-5, 1e6, 0, false};
  if (type == "qwen2")
    return {32, 32768, 1e-6, 10000.0, 4096, false};
  return {0, 2048, 1e-6, 10000.0, 0, true};
}

void readLlama(ConfigReader &r, const std::string &file, const json &config,
               const std::string &type, LlamaConfig &c) {
  LlamaFamily family = llamaFamily(type);
  c.layers = r.positive("num_hidden_layers");
  c.hidden = r.positive("hidden_size");
  c.heads = r.positive("num_attention_heads");
  // Left out, the family's default; null, one per query head (transformers
  // sets None to num_attention_heads).
  c.kvHeads = r.positive(
      "num_key_value_heads",
      config.contains("num_key_value_heads") || family.kvHeads == 0 ? c.heads : family.kvHeads);
  c.ffn = r.positive("intermediate_size");
  c.vocab = r.positive("vocab_size");
  c.rmsEps = r.number("rms_norm_eps", family.rmsEps);
  c.tieEmbeddings = r.flag("tie_word_embeddings", false);
  std::string act = r.text("hidden_act", "silu");
  if (act != "silu")
    r.refuse("hidden_act", "pmlir's Llama MLP is SwiGLU (silu)");
  if (c.heads > 0 && c.hidden % c.heads == 0 && !r.raw("head_dim").empty() &&
      r.positive("head_dim") != c.hidden / c.heads)
    r.refuse("head_dim", llvm::formatv("pmlir's heads are hidden_size / num_attention_heads = {0} "
                                       "wide",
                                       c.hidden / c.heads)
                             .str());
  // The rotary embedding: rope_theta beside rope_scaling (transformers 4),
  // or rope_parameters (transformers 5).
  c.ropeTheta = r.number("rope_theta", family.ropeTheta);
  if (!r.raw("rope_scaling").empty())
    r.refuse("rope_scaling", "pmlir's rotary embedding has no scaling (only its theta)");
  if (auto params = config.find("rope_parameters"); params != config.end() && !params->is_null()) {
    ConfigReader rope(file + " (rope_parameters)", *params);
    std::string kind = rope.text("rope_type", "default");
    if (kind != "default")
      r.refuse("rope_parameters", "pmlir's rotary embedding has no scaling (rope_type default)");
    c.ropeTheta = rope.number("rope_theta", c.ropeTheta);
    if (llvm::Error e = rope.take())
      r.adopt(llvm::toString(std::move(e)));
  }
  if (type == "qwen2") {
    // Qwen2 adds biases to the query, key and value projections always.
    c.attentionBias = ProjectionBias::QueryKeyValue;
  } else if (family.readsProjectionBias && r.flag("attention_bias", false)) {
    c.attentionBias = ProjectionBias::All;
  }
  c.mlpBias = family.readsProjectionBias && r.flag("mlp_bias", false);
  // A window no longer than the sequence changes which keys a query sees.
  // Qwen2 windows the layers from max_window_layers on; transformers 5
  // names each layer's attention in layer_types.
  bool windowed = type == "mistral" || type == "mixtral" ||
                  (type == "qwen2" && r.flag("use_sliding_window", false) &&
                   c.layers > r.nonNegative("max_window_layers", 28));
  if (auto types = config.find("layer_types"); types != config.end() && !types->is_null()) {
    bool known = types->is_array();
    for (const json &t : known ? *types : json::array())
      if (t == "sliding_attention")
        windowed = true;
      else if (t != "full_attention")
        known = false;
    if (!known)
      r.refuse("layer_types", "pmlir's layers have full_attention (or sliding_attention over a "
                              "window no shorter than --seq)");
  }
  // Left out, the family's default window; null, none. Read only where a
  // layer is windowed.
  int64_t window = !windowed                            ? 0
                   : !config.contains("sliding_window") ? family.slidingWindow
                   : r.raw("sliding_window").empty()    ? 0
                                                        : r.positive("sliding_window");
  if (window > 0 && window < c.seq)
    r.fail(llvm::formatv("'sliding_window' is {0}{1}: shorter than --seq {2}, and pmlir's "
                         "attention sees every earlier position",
                         window,
                         config.contains("sliding_window")
                             ? ""
                             : llvm::formatv(" (left out: {0}'s default)", type).str(),
                         c.seq)
               .str());
  c.maxPositions = r.positive("max_position_embeddings", family.maxPositions);
  if (type == "mixtral") {
    c.experts = r.positive("num_local_experts", 8);
    c.topK = r.positive("num_experts_per_tok", 2);
    if (!r.raw("router_jitter_noise").empty() && r.raw("router_jitter_noise") != "0" &&
        r.raw("router_jitter_noise") != "0.0")
      r.refuse("router_jitter_noise", "pmlir's router adds no noise to its logits");
    // transformers adds the load-balancing loss to the loss only when the
    // model returns its router logits; a model without a loss has no term
    // to weigh.
    if (r.flag("output_router_logits", false)) {
      double coef = r.nonNegative("router_aux_loss_coef", 0.001);
      if (c.loss)
        c.routerAuxLossCoef = coef;
    }
  }
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

llvm::Expected<HuggingFaceModel> pmlir::readHuggingFaceConfig(const std::string &path, int64_t seq,
                                                              int64_t batch, bool loss) {
  // A .json file is the config itself; anything else names the directory.
  bool isJson = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  std::string file = isJson && !isDirectory(path) ? path : path + "/config.json";
  auto failWith = [&](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), file + ": " + message);
  };
  if (isDirectory(file))
    return failWith("is a directory, not a JSON file");
  std::ifstream in(file);
  if (!in)
    return failWith("cannot be read (a Hugging Face model directory holds config.json)");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (size_t depth = bracketDepth(text, /*mlir=*/false); depth > kMaxConfigNesting)
    return failWith(llvm::formatv("JSON nested {0} deep, which no config is", depth).str());
  json config = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded())
    return failWith("not valid JSON (cut short, or not JSON)");
  if (!config.is_object())
    return failWith("not a JSON object");

  HuggingFaceModel model;
  ConfigReader r(file, config);
  model.modelType = r.text("model_type", "");
  if (model.modelType == "gpt2") {
    model.family = HuggingFaceModel::Family::Gpt2;
    model.gpt2.seq = seq;
    model.gpt2.batch = batch;
    model.gpt2.loss = loss;
    readGpt2(r, model.gpt2);
  } else if (model.modelType == "llama" || model.modelType == "mistral" ||
             model.modelType == "qwen2" || model.modelType == "mixtral") {
    model.family = HuggingFaceModel::Family::Llama;
    model.llama.seq = seq;
    model.llama.batch = batch;
    model.llama.loss = loss;
    readLlama(r, file, config, model.modelType, model.llama);
  } else {
    r.fail("'model_type' is " + (r.raw("model_type").empty() ? "missing" : r.raw("model_type")) +
           ": pmlir builds gpt2, llama, mistral, qwen2 and mixtral");
  }
  // A quantized checkpoint stores packed integers (and scales) under other
  // names than the float weights the model binds, so it would fail only at
  // the first run, naming a missing tensor instead of the cause.
  if (!r.raw("quantization_config").empty())
    r.refuse("quantization_config", "pmlir loads float weights (F32, F64, F16 or BF16), not "
                                    "a quantized checkpoint's packed integers");
  // The dtype the weights were saved in: transformers writes torch_dtype
  // (dtype since 4.56). The model is built in f32 from any float dtype.
  for (const char *field : {"torch_dtype", "dtype"}) {
    std::string dtype = r.text(field, "float32");
    if (dtype != "float32" && dtype != "float16" && dtype != "bfloat16" && dtype != "float64")
      r.refuse(field, "pmlir loads float weights (float32, float64, float16 or bfloat16)");
  }
  if (llvm::Error e = r.take())
    return std::move(e);
  // The model's constraints, named by the fields that break them (the
  // sequence and batch are pmlir-gen's flags still).
  bool gpt2 = model.family == HuggingFaceModel::Family::Gpt2;
  auto fieldOf = [&](llvm::StringRef flag) -> std::string {
    static const std::map<std::string, std::pair<const char *, const char *>> fields = {
        {"layers", {"n_layer", "num_hidden_layers"}},
        {"hidden", {"n_embd", "hidden_size"}},
        {"heads", {"n_head", "num_attention_heads"}},
        {"kv-heads", {"", "num_key_value_heads"}},
        {"ffn", {"n_inner", "intermediate_size"}},
        {"vocab", {"vocab_size", "vocab_size"}},
        {"max-positions", {"n_positions", "max_position_embeddings"}},
        {"layer-norm-eps", {"layer_norm_epsilon", ""}},
        {"rms-eps", {"", "rms_norm_eps"}},
        {"rope-theta", {"", "rope_theta"}},
        {"experts", {"", "num_local_experts"}},
        {"top-k", {"", "num_experts_per_tok"}},
        {"router-aux-loss-coef", {"", "router_aux_loss_coef"}}};
    auto it = fields.find(flag.str());
    const char *field = it == fields.end() ? "" : gpt2 ? it->second.first : it->second.second;
    return *field ? "'" + std::string(field) + "'" : flagName(flag);
  };
  if (llvm::Error e = gpt2 ? validate(model.gpt2, fieldOf) : validate(model.llama, fieldOf)) {
    // A field the message names that the file leaves out has the family's
    // default, which the user never wrote.
    std::string message = llvm::toString(std::move(e));
    for (const char *field : {"num_key_value_heads", "max_position_embeddings", "n_positions"})
      if (message.find("'" + std::string(field) + "'") != std::string::npos &&
          !config.contains(field))
        message +=
            llvm::formatv(" ('{0}' is left out of the file: {1}'s default)", field, model.modelType)
                .str();
    return failWith(message);
  }
  return model;
}

std::string pmlir::huggingFaceConfig(const Gpt2Config &c) {
  json config = {
      {"model_type", "gpt2"},
      {"architectures", {"GPT2LMHeadModel"}},
      {"n_layer", c.layers},
      {"n_embd", c.hidden},
      {"n_head", c.heads},
      {"vocab_size", c.vocab},
      {"n_positions", c.maxPositions},
      {"n_inner", c.ffn > 0 ? json(c.ffn) : json(nullptr)},
      {"layer_norm_epsilon", c.layerNormEps},
      {"activation_function", c.gelu == tfm::GeluApproximation::erf ? "gelu" : "gelu_new"},
      {"tie_word_embeddings", c.tieEmbeddings},
      {"dtype", "float32"}};
  return config.dump(2);
}

std::string pmlir::huggingFaceConfig(const LlamaConfig &c) {
  if (c.experts > 0)
    return json({{"model_type", "mixtral"},
                 {"architectures", {"MixtralForCausalLM"}},
                 {"num_hidden_layers", c.layers},
                 {"hidden_size", c.hidden},
                 {"num_attention_heads", c.heads},
                 {"num_key_value_heads", c.kvHeads},
                 {"intermediate_size", c.ffn},
                 {"num_local_experts", c.experts},
                 {"num_experts_per_tok", c.topK},
                 {"output_router_logits", c.routerAuxLossCoef > 0},
                 {"router_aux_loss_coef", c.routerAuxLossCoef},
                 {"vocab_size", c.vocab},
                 {"max_position_embeddings", c.maxPositions > 0 ? c.maxPositions : c.seq},
                 {"rms_norm_eps", c.rmsEps},
                 {"rope_theta", c.ropeTheta},
                 {"sliding_window", nullptr},
                 {"hidden_act", "silu"},
                 {"tie_word_embeddings", c.tieEmbeddings},
                 {"dtype", "float32"}})
        .dump(2);
  // Query, key and value biases alone are Qwen2's; Llama's attention_bias
  // biases all four projections. Beside MLP biases, which Qwen2 lacks, no
  // class of transformers has them.
  if (c.attentionBias == ProjectionBias::QueryKeyValue && c.mlpBias)
    return "";
  bool qwen2 = c.attentionBias == ProjectionBias::QueryKeyValue;
  json config = {{"model_type", qwen2 ? "qwen2" : "llama"},
                 {"architectures", {qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
                 {"num_hidden_layers", c.layers},
                 {"hidden_size", c.hidden},
                 {"num_attention_heads", c.heads},
                 {"num_key_value_heads", c.kvHeads},
                 {"intermediate_size", c.ffn},
                 {"vocab_size", c.vocab},
                 {"max_position_embeddings", c.maxPositions > 0 ? c.maxPositions : c.seq},
                 {"rms_norm_eps", c.rmsEps},
                 {"rope_theta", c.ropeTheta},
                 {"hidden_act", "silu"},
                 {"tie_word_embeddings", c.tieEmbeddings},
                 {"dtype", "float32"}};
  if (!qwen2) {
    config["attention_bias"] = c.attentionBias == ProjectionBias::All;
    config["mlp_bias"] = c.mlpBias;
  }
  return config.dump(2);
}

namespace {

mlir::Attribute toAttr(mlir::MLIRContext *context, const json &value) {
  mlir::Builder b(context);
  if (value.is_boolean())
    return b.getBoolAttr(value.get<bool>());
  if (value.is_number_integer())
    return b.getI64IntegerAttr(value.get<int64_t>());
  if (value.is_number())
    return b.getF64FloatAttr(value.get<double>());
  if (value.is_string())
    return b.getStringAttr(value.get<std::string>());
  if (value.is_array()) {
    llvm::SmallVector<mlir::Attribute> elements;
    for (const json &e : value)
      if (mlir::Attribute a = toAttr(context, e))
        elements.push_back(a);
    return b.getArrayAttr(elements);
  }
  if (value.is_object()) {
    llvm::SmallVector<mlir::NamedAttribute> fields;
    for (auto it = value.begin(); it != value.end(); ++it)
      if (mlir::Attribute a = toAttr(context, *it))
        fields.push_back(b.getNamedAttr(it.key(), a));
    return b.getDictionaryAttr(fields);
  }
  return {};
}

json toJson(mlir::Attribute attr) {
  if (auto v = llvm::dyn_cast<mlir::BoolAttr>(attr))
    return v.getValue();
  if (auto v = llvm::dyn_cast<mlir::IntegerAttr>(attr))
    return v.getInt();
  if (auto v = llvm::dyn_cast<mlir::FloatAttr>(attr))
    return v.getValueAsDouble();
  if (auto v = llvm::dyn_cast<mlir::StringAttr>(attr))
    return v.getValue().str();
  if (auto v = llvm::dyn_cast<mlir::ArrayAttr>(attr)) {
    json out = json::array();
    for (mlir::Attribute e : v)
      out.push_back(toJson(e));
    return out;
  }
  json out = json::object();
  if (auto v = llvm::dyn_cast<mlir::DictionaryAttr>(attr))
    for (mlir::NamedAttribute field : v)
      out[field.getName().str()] = toJson(field.getValue());
  return out;
}

} // namespace

mlir::DictionaryAttr pmlir::huggingFaceConfigAttr(mlir::MLIRContext *context,
                                                  const std::string &config) {
  return llvm::dyn_cast_or_null<mlir::DictionaryAttr>(
      toAttr(context, json::parse(config, nullptr, /*allow_exceptions=*/false)));
}

std::string pmlir::huggingFaceConfigText(mlir::DictionaryAttr config) {
  return toJson(config).dump(2);
}

std::string pmlir::huggingFaceName(const std::string &config, const std::string &name,
                                   std::string &error) {
  json parsed = json::parse(config, nullptr, /*allow_exceptions=*/false);
  std::string type =
      parsed.is_object() && parsed.contains("model_type") && parsed["model_type"].is_string()
          ? parsed["model_type"].get<std::string>()
          : "";
  if (type == "gpt2")
    return llvm::StringRef(name).starts_with("lm_head.") ? name : "transformer." + name;
  // DeepSeek's shared experts have no place in MixtralForCausalLM, which
  // would load the model without them.
  if (type == "mixtral" && name.find(".shared_experts.") != std::string::npos) {
    error = "'" + name +
            "' is a shared expert, which Hugging Face's MixtralForCausalLM does not "
            "have";
    return "";
  }
  if (type == "llama" || type == "qwen2" || type == "mistral" || type == "mixtral")
    return name;
  error =
      "its tfm.huggingface_config names no model class pmlir exports (model_type '" + type + "')";
  return "";
}
