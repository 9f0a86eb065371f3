//===- Program.cpp - A compiled program with its arguments bound ----------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Program.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Runtime/Runtime.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"

#include <cstring>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::exec;

namespace {

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// The per-dimension mesh axes of a `tfm.sharding`: a #tfm.sharding's dims
/// or the plain list [[...], ...] of hand-written per-rank programs.
std::optional<DimAxes> shardingOf(Attribute attr, std::string &error) {
  ArrayAttr dims;
  if (auto sharding = dyn_cast_or_null<tfm::ShardingAttr>(attr))
    dims = sharding.getDims();
  else
    dims = dyn_cast_or_null<ArrayAttr>(attr);
  if (!dims)
    return std::nullopt;
  DimAxes axes;
  for (auto [d, entry] : llvm::enumerate(dims)) {
    auto list = dyn_cast<ArrayAttr>(entry);
    if (!list) {
      error = "tfm.sharding entry " + std::to_string(d) + " is not a list of mesh axes";
      return std::nullopt;
    }
    axes.emplace_back();
    for (Attribute a : list) {
      auto name = dyn_cast<StringAttr>(a);
      if (!name) {
        error = "tfm.sharding names mesh axis (not a string), which --mesh does not have";
        return std::nullopt;
      }
      axes.back().push_back(name.str());
    }
  }
  return axes;
}

/// The part counts of a #tfm.sharding (empty: none).
std::vector<int64_t> partsOf(Attribute attr) {
  auto sharding = dyn_cast_or_null<tfm::ShardingAttr>(attr);
  if (!sharding)
    return {};
  return std::vector<int64_t>(sharding.getParts().begin(), sharding.getParts().end());
}

std::optional<std::vector<int64_t>> globalShapeOf(Attribute attr) {
  auto type = dyn_cast_or_null<TypeAttr>(attr);
  auto tensor = type ? dyn_cast<RankedTensorType>(type.getValue()) : RankedTensorType();
  if (!tensor)
    return std::nullopt;
  return std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end());
}

Role roleOf(tfm::ArgumentRole role) {
  switch (role) {
  case tfm::ArgumentRole::Param:
    return Role::Param;
  case tfm::ArgumentRole::Input:
    return Role::Input;
  case tfm::ArgumentRole::Label:
    return Role::Label;
  case tfm::ArgumentRole::OptimizerState:
    return Role::OptimizerState;
  }
  llvm_unreachable("unknown argument role");
}

} // namespace

bool exec::describeEntry(func::FuncOp entry, EntrySignature &signature, std::string &error) {
  std::string where = " of @" + entry.getSymName().str();
  signature = EntrySignature();
  signature.name = entry.getSymName().str();
  if (entry.getNumResults() != 1) {
    error = "@" + signature.name + " must return one tensor, returns " +
            std::to_string(entry.getNumResults());
    return false;
  }
  auto resultType = dyn_cast<RankedTensorType>(entry.getResultTypes()[0]);
  if (!resultType || !resultType.hasStaticShape() || !resultType.getElementType().isF32()) {
    error = "@" + signature.name + " must return an f32 tensor of static shape, returns " +
            typeText(entry.getResultTypes()[0]);
    return false;
  }
  TensorSpec &result = signature.result;
  result.name = "logits";
  if (auto name = entry.getResultAttrOfType<StringAttr>(0, tfm::kNameAttr))
    result.name = name.str();
  result.shape.assign(resultType.getShape().begin(), resultType.getShape().end());
  std::string bad;
  result.sharding = shardingOf(entry.getResultAttr(0, tfm::kShardingAttr), bad);
  if (!bad.empty()) {
    error = "the result" + where + " " + bad;
    return false;
  }
  result.global = globalShapeOf(entry.getResultAttr(0, tfm::kGlobalTypeAttr));
  result.parts = partsOf(entry.getResultAttr(0, tfm::kShardingAttr));

  for (BlockArgument arg : entry.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape()) {
      error = "argument #" + std::to_string(i) + where + " must be a tensor of static shape";
      return false;
    }
    auto name = entry.getArgAttrOfType<StringAttr>(i, tfm::kNameAttr);
    if (!name) {
      error = "argument #" + std::to_string(i) + where + " has no tfm.name to bind it by";
      return false;
    }
    TensorSpec spec;
    spec.name = name.str();
    spec.shape.assign(type.getShape().begin(), type.getShape().end());
    Type element = type.getElementType();
    if (element.isF32())
      spec.element = ElementKind::F32;
    else if (element.isInteger(64))
      spec.element = ElementKind::I64;
    else if (element.isInteger(32))
      spec.element = ElementKind::I32;
    else {
      error = "argument '" + spec.name + "' has unsupported element type";
      return false;
    }
    spec.role = roleOf(tfm::argumentRole(entry, i));
    spec.sharding = shardingOf(entry.getArgAttr(i, tfm::kShardingAttr), bad);
    if (!bad.empty()) {
      error = "argument '" + spec.name + "' " + bad;
      return false;
    }
    spec.global = globalShapeOf(entry.getArgAttr(i, tfm::kGlobalTypeAttr));
    spec.parts = partsOf(entry.getArgAttr(i, tfm::kShardingAttr));
    signature.arguments.push_back(std::move(spec));
  }
  return true;
}

MemRefDescriptor::MemRefDescriptor(void *data, const std::vector<int64_t> &shape) {
  words.resize(3 + 2 * shape.size());
  setPointers(data);
  words[2] = 0;
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    words[3 + i] = shape[i];
    words[3 + shape.size() + i] = stride;
    stride *= shape[i];
  }
}

void MemRefDescriptor::setPointers(void *data) {
  std::memcpy(&words[0], &data, sizeof(void *));
  std::memcpy(&words[1], &data, sizeof(void *));
}

void *MemRefDescriptor::allocated() const {
  void *p;
  std::memcpy(&p, &words[0], sizeof(void *));
  return p;
}

void *MemRefDescriptor::aligned() const {
  void *p;
  std::memcpy(&p, &words[1], sizeof(void *));
  return p;
}

JitProgram::~JitProgram() { releaseResult(); }

std::unique_ptr<JitProgram> JitProgram::create(ModuleOp lowered, const EntrySignature &signature,
                                               std::string &error) {
  std::unique_ptr<JitProgram> program(new JitProgram());
  program->symbol = "_mlir_ciface_" + signature.name;
  program->resultShape = signature.result.shape;
  // Optimize for this host: without its target machine LLVM's cost model
  // sees no vector registers and leaves every loop scalar.
  auto hostMachine = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!hostMachine) {
    error = "no target for this host: " + llvm::toString(hostMachine.takeError());
    return nullptr;
  }
  auto targetMachine = hostMachine->createTargetMachine();
  if (!targetMachine) {
    error = "no target for this host: " + llvm::toString(targetMachine.takeError());
    return nullptr;
  }
  ExecutionEngineOptions options;
  auto transformer = makeOptimizingTransformer(3, 0, targetMachine->get());
  options.transformer = transformer;
  auto created = ExecutionEngine::create(lowered, options);
  if (!created) {
    error = "JIT compilation failed: " + llvm::toString(created.takeError());
    return nullptr;
  }
  program->engine = std::move(*created);
  program->engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap map;
    for (const pmlir_rt_symbol *table :
         {pmlir_rt_cpu_kernel_symbols(), pmlir_rt_collective_symbols()})
      for (const pmlir_rt_symbol *s = table; s->name; ++s)
        map[interner(s->name)] = {llvm::orc::ExecutorAddr::fromPtr(s->address),
                                  llvm::JITSymbolFlags::Exported};
    return map;
  });
  return program;
}

void JitProgram::bind(std::vector<BoundArgument> &args) {
  releaseResult();
  descriptors.clear();
  pointers.clear();
  packed.clear();
  descriptors.reserve(args.size() + 1);
  descriptors.emplace_back(nullptr, resultShape);
  for (BoundArgument &a : args)
    descriptors.emplace_back(a.data, a.shape);
  for (MemRefDescriptor &d : descriptors)
    pointers.push_back(d.words.data());
  for (void *&p : pointers)
    packed.push_back(&p);
}

bool JitProgram::run(std::string &error) {
  releaseResult();
  if (llvm::Error err = engine->invokePacked(symbol, packed)) {
    error = llvm::toString(std::move(err));
    return false;
  }
  return true;
}

const float *JitProgram::result() const {
  return descriptors.empty() ? nullptr : static_cast<const float *>(descriptors[0].aligned());
}

void JitProgram::releaseResult() {
  if (descriptors.empty())
    return;
  std::free(descriptors[0].allocated());
  descriptors[0].setPointers(nullptr);
}
