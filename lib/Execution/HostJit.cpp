//===- HostJit.cpp - An LLVM module compiled for this host ----------------===//
//
// Part of pmlir.
//
// The cache's key is a digest of everything the object depends on: the
// module's bitcode (with the entry's wrapper and the constructor functions
// made, nothing optimized yet), the host CPU and its features as the
// target machine sees them, the optimization level, LLVM's version, and
// kObjectFormat for what is done to the module after the key is taken. A
// module names the runtime's functions it calls (with their types), never
// their addresses, so an object is valid in any process that compiles the
// same module.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/HostJit.h"

#include "pmlir/Execution/ObjectCache.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/ExecutionEngine/JITEventListener.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/BLAKE3.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <algorithm>

using namespace pmlir::exec;

namespace {

/// Changed whenever what create does to a module after taking its key
/// changes (the internalization, the optimization, code generation's
/// settings): objects made the old way are then never loaded.
constexpr llvm::StringLiteral kObjectFormat = "pmlir-object-1";
constexpr llvm::StringLiteral kInit = "pmlir_jit_init", kFini = "pmlir_jit_fini";

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// An error of the JIT's as text: the JIT's own may refer to strings it
/// owns, and it is gone when the error is read.
llvm::Error detached(llvm::Error error) { return fail(llvm::toString(std::move(error))); }

/// Defines `void @_mlir_NAME(ptr args)` calling `entry` with the values the
/// pointers args[0..n) point at, storing its result where args[n] points.
void addPackedWrapper(llvm::Function &entry) {
  llvm::Module &module = *entry.getParent();
  llvm::LLVMContext &context = module.getContext();
  llvm::IRBuilder<> b(context);
  auto *type = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, /*isVarArg=*/false);
  auto *wrapper = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                         "_mlir_" + entry.getName(), module);
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "", wrapper));
  llvm::Value *args = wrapper->getArg(0);
  auto slot = [&](size_t i) {
    return b.CreateLoad(b.getPtrTy(), b.CreateConstGEP1_64(b.getPtrTy(), args, i));
  };
  llvm::SmallVector<llvm::Value *> values;
  for (llvm::Argument &argument : entry.args())
    values.push_back(b.CreateLoad(argument.getType(), slot(argument.getArgNo())));
  llvm::Value *result = b.CreateCall(&entry, values);
  if (!result->getType()->isVoidTy())
    b.CreateStore(result, slot(entry.arg_size()));
  b.CreateRetVoid();
}

/// Replaces the array `global` (llvm.global_ctors or llvm.global_dtors) by
/// a function `name` that calls its functions in ascending priority, as a
/// loader would: an object loaded from the cache has no IR to run them from.
void callInOrder(llvm::Module &module, llvm::StringRef global, llvm::StringRef name) {
  std::vector<std::pair<unsigned, llvm::Function *>> calls;
  auto elements = global == "llvm.global_ctors" ? llvm::orc::getConstructors(module)
                                                : llvm::orc::getDestructors(module);
  for (const llvm::orc::CtorDtorIterator::Element &element : elements)
    if (element.Func)
      calls.emplace_back(element.Priority, element.Func);
  std::stable_sort(calls.begin(), calls.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  llvm::LLVMContext &context = module.getContext();
  llvm::IRBuilder<> b(context);
  auto *function = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), false),
                                          llvm::Function::ExternalLinkage, name, module);
  b.SetInsertPoint(llvm::BasicBlock::Create(context, "", function));
  for (auto [priority, callee] : calls)
    b.CreateCall(callee->getFunctionType(), callee);
  b.CreateRetVoid();
  if (llvm::GlobalVariable *array = module.getNamedGlobal(global))
    array->eraseFromParent();
}

/// Feeds what is written to a digest.
class DigestStream : public llvm::raw_ostream {
public:
  explicit DigestStream(llvm::BLAKE3 &hasher) : hasher(hasher) {}
  ~DigestStream() override { flush(); }

private:
  void write_impl(const char *data, size_t size) override {
    hasher.update(llvm::StringRef(data, size));
    written += size;
  }
  uint64_t current_pos() const override { return written; }
  llvm::BLAKE3 &hasher;
  uint64_t written = 0;
};

std::string keyOf(const llvm::Module &module, const llvm::TargetMachine &machine,
                  unsigned optLevel) {
  llvm::BLAKE3 hasher;
  const std::string &triple = machine.getTargetTriple().str();
  for (llvm::StringRef part :
       {llvm::StringRef(kObjectFormat), llvm::StringRef(LLVM_VERSION_STRING),
        llvm::StringRef(triple), machine.getTargetCPU(), machine.getTargetFeatureString()}) {
    hasher.update(part);
    hasher.update(llvm::StringRef("\0", 1));
  }
  hasher.update(std::to_string(optLevel));
  {
    DigestStream stream(hasher);
    llvm::WriteBitcodeToFile(module, stream);
  }
  llvm::BLAKE3Result<32> digest = hasher.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

/// RuntimeDyld, as MLIR's ExecutionEngine links, with gdb and perf told
/// of the program's functions as it tells them.
llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>>
objectLayer(llvm::orc::ExecutionSession &session) {
  auto layer = std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
      session,
      [](const llvm::MemoryBuffer &) { return std::make_unique<llvm::SectionMemoryManager>(); });
  layer->registerJITEventListener(*llvm::JITEventListener::createGDBRegistrationListener());
  if (llvm::JITEventListener *perf = llvm::JITEventListener::createPerfJITEventListener())
    layer->registerJITEventListener(*perf);
  return layer;
}

} // namespace

void pmlir::exec::internalizeAllBut(llvm::Module &module, llvm::ArrayRef<llvm::StringRef> kept) {
  llvm::internalizeModule(module, [&](const llvm::GlobalValue &value) {
    return llvm::is_contained(kept, value.getName());
  });
  // At -O2 GlobalDCE would erase them; at -O0 nothing else does.
  bool erased = true;
  while (erased) {
    erased = false;
    for (llvm::Function &function : llvm::make_early_inc_range(module))
      if (function.hasLocalLinkage() && function.use_empty()) {
        function.eraseFromParent();
        erased = true;
      }
  }
}

HostJit::~HostJit() {
  if (fini)
    fini();
}

llvm::Expected<std::unique_ptr<HostJit>> HostJit::create(std::unique_ptr<llvm::Module> given,
                                                         std::unique_ptr<llvm::LLVMContext> owner,
                                                         llvm::StringRef entryName, Symbols symbols,
                                                         const Options &options) {
  // The module before its context, on every return (parameters are
  // destroyed in an order the language leaves open).
  std::unique_ptr<llvm::LLVMContext> context = std::move(owner);
  std::unique_ptr<llvm::Module> module = std::move(given);
  std::unique_ptr<HostJit> jit(new HostJit());
  // Optimize for this host: without its target machine LLVM's cost model
  // sees no vector registers and leaves every loop scalar. One description
  // of the host makes that machine and the JIT's.
  auto host = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!host)
    return fail("no target for this host: " + llvm::toString(host.takeError()));
  auto machine = host->createTargetMachine();
  if (!machine)
    return fail("no target for this host: " + llvm::toString(machine.takeError()));
  module->setDataLayout((*machine)->createDataLayout());
  module->setTargetTriple((*machine)->getTargetTriple());
  llvm::Function *entry = module->getFunction(entryName);
  if (!entry || entry->isDeclaration())
    return fail("the module defines no @" + entryName);
  addPackedWrapper(*entry);
  std::string packedName = ("_mlir_" + entryName).str();
  callInOrder(*module, "llvm.global_ctors", kInit);
  callInOrder(*module, "llvm.global_dtors", kFini);

  std::string key = options.cache ? keyOf(*module, **machine, options.optLevel) : "";
  std::unique_ptr<llvm::MemoryBuffer> object =
      options.cache ? options.cache->load(key, jit->warning) : nullptr;
  jit->cached = object != nullptr;
  if (!object) {
    internalizeAllBut(*module, {packedName, kInit, kFini});
    if (llvm::Error error =
            mlir::makeOptimizingTransformer(options.optLevel, 0, machine->get())(module.get()))
      return std::move(error);
    llvm::SmallVector<char, 0> bytes;
    llvm::raw_svector_ostream stream(bytes);
    llvm::legacy::PassManager passes;
    if ((*machine)->addPassesToEmitFile(passes, stream, nullptr, llvm::CodeGenFileType::ObjectFile))
      return fail("this host's target cannot emit an object file");
    passes.run(*module);
    llvm::StringRef text(bytes.data(), bytes.size());
    std::string notKept;
    if (options.cache && options.keepCompiled && !options.cache->store(key, text, notKept))
      jit->warning += (jit->warning.empty() ? "" : "; ") + notKept;
    object = llvm::MemoryBuffer::getMemBufferCopy(text, "pmlir-program");
  }
  llvm::DataLayout layout = module->getDataLayout();
  module.reset();
  context.reset();

  auto created = llvm::orc::LLJITBuilder()
                     .setJITTargetMachineBuilder(std::move(*host))
                     .setDataLayout(layout)
                     .setObjectLinkingLayerCreator(objectLayer)
                     .create();
  if (!created)
    return detached(created.takeError());
  jit->jit = std::move(*created);
  llvm::orc::JITDylib &main = jit->jit->getMainJITDylib();
  auto process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(layout.getGlobalPrefix());
  if (!process)
    return detached(process.takeError());
  main.addGenerator(std::move(*process));
  llvm::orc::MangleAndInterner intern(jit->jit->getExecutionSession(), layout);
  llvm::orc::SymbolMap map;
  for (auto [name, address] : symbols)
    map[intern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported};
  if (llvm::Error error = main.define(llvm::orc::absoluteSymbols(std::move(map))))
    return detached(std::move(error));
  if (llvm::Error error = jit->jit->addObjectFile(std::move(object)))
    return detached(std::move(error));
  auto packed = jit->jit->lookup(packedName);
  if (!packed)
    return detached(packed.takeError());
  auto init = jit->jit->lookup(kInit);
  if (!init)
    return detached(init.takeError());
  auto fini = jit->jit->lookup(kFini);
  if (!fini)
    return detached(fini.takeError());
  jit->entry = packed->toPtr<void (*)(void **)>();
  init->toPtr<void (*)()>()();
  jit->fini = fini->toPtr<void (*)()>();
  return std::move(jit);
}
