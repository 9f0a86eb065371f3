//===- HostJitTest.cpp - Programs compiled here, their objects kept -------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/HostJit.h"
#include "pmlir/Execution/ObjectCache.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <vector>

using namespace pmlir::exec;

namespace {

std::vector<int64_t> &events() {
  static std::vector<int64_t> recorded;
  return recorded;
}
extern "C" void pmlir_test_record(int64_t event) { events().push_back(event); }

// An entry of two arguments and a result; two constructors, the later in
// the array first by priority, and a destructor, each recording itself
// through a function of this process bound by name.
constexpr const char *kProgram = R"(
declare void @pmlir_test_record(i64)
define internal void @early() {
  call void @pmlir_test_record(i64 1)
  ret void
}
define internal void @late() {
  call void @pmlir_test_record(i64 2)
  ret void
}
define internal void @unload() {
  call void @pmlir_test_record(i64 3)
  ret void
}
@llvm.global_ctors = appending global [2 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 200, ptr @late, ptr null }, { i32, ptr, ptr } { i32 100, ptr @early, ptr null }]
@llvm.global_dtors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @unload, ptr null }]
define float @_mlir_ciface_step(ptr %p, float %scale) {
  %v = load float, ptr %p
  %r = fmul float %v, %scale
  ret float %r
}
)";

class HostJitTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    events().clear();
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("pmlir-host-jit-test", scratch));
  }
  void TearDown() override { llvm::sys::fs::remove_directories(scratch); }

  /// Compiles kProgram and runs its entry on 3 x 2; the result.
  float compileAndRun(const HostJit::Options &options, bool *fromCache = nullptr,
                      std::string *warning = nullptr) {
    auto context = std::make_unique<llvm::LLVMContext>();
    llvm::SMDiagnostic diagnostic;
    std::unique_ptr<llvm::Module> module =
        llvm::parseAssemblyString(kProgram, diagnostic, *context);
    EXPECT_TRUE(module) << diagnostic.getMessage().str();
    std::pair<const char *, void *> symbols[] = {
        {"pmlir_test_record", reinterpret_cast<void *>(&pmlir_test_record)}};
    auto jit = HostJit::create(std::move(module), std::move(context), "_mlir_ciface_step", symbols,
                               options);
    if (!jit) {
      ADD_FAILURE() << llvm::toString(jit.takeError());
      return 0;
    }
    float value = 3, scale = 2, result = 0;
    float *pointer = &value;
    void *args[] = {&pointer, &scale, &result};
    (*jit)->packedEntry()(args);
    if (fromCache)
      *fromCache = (*jit)->fromCache();
    if (warning)
      *warning = (*jit)->cacheWarning();
    return result;
  }

  static HostJit::Options keptIn(const ObjectCache &cache) {
    HostJit::Options options;
    options.cache = &cache;
    return options;
  }

  std::vector<std::string> cachedObjects(llvm::StringRef directory) {
    std::vector<std::string> files;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(directory, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef name = llvm::sys::path::filename(it->path());
      if (name.starts_with("llvmcache-") && name != "llvmcache.timestamp")
        files.push_back(it->path());
    }
    return files;
  }

  llvm::SmallString<128> scratch;
};

TEST_F(HostJitTest, RunsTheEntryAndTheConstructorsInOrder) {
  EXPECT_EQ(compileAndRun({}), 6.0f);
  // Priority 100 before 200 while loading; the destructor when destroyed.
  EXPECT_EQ(events(), (std::vector<int64_t>{1, 2, 3}));
}

TEST_F(HostJitTest, AnEntryTheModuleLacksIsAnError) {
  auto context = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(kProgram, diagnostic, *context);
  ASSERT_TRUE(module);
  auto jit = HostJit::create(std::move(module), std::move(context), "_mlir_ciface_other", {}, {});
  ASSERT_FALSE(jit);
  EXPECT_EQ(llvm::toString(jit.takeError()), "the module defines no @_mlir_ciface_other");
}

TEST_F(HostJitTest, AKeptObjectIsLoadedNotCompiled) {
  ObjectCache cache((scratch + "/objects").str());
  HostJit::Options options = keptIn(cache);
  bool fromCache = true;
  std::string warning;
  EXPECT_EQ(compileAndRun(options, &fromCache, &warning), 6.0f);
  EXPECT_FALSE(fromCache);
  EXPECT_EQ(warning, "");
  ASSERT_EQ(cachedObjects(cache.path()).size(), 1u);

  events().clear();
  EXPECT_EQ(compileAndRun(options, &fromCache, &warning), 6.0f);
  EXPECT_TRUE(fromCache);
  EXPECT_EQ(warning, "");
  // The loaded object runs its constructors and destructor as compiled.
  EXPECT_EQ(events(), (std::vector<int64_t>{1, 2, 3}));

  // Another optimization level is another object.
  options.optLevel = 0;
  EXPECT_EQ(compileAndRun(options, &fromCache), 6.0f);
  EXPECT_FALSE(fromCache);
  EXPECT_EQ(cachedObjects(cache.path()).size(), 2u);
}

TEST_F(HostJitTest, AnObjectNotToKeepIsLoadedButNotKept) {
  ObjectCache cache((scratch + "/objects").str());
  HostJit::Options options = keptIn(cache);
  options.keepCompiled = false;
  bool fromCache = true;
  EXPECT_EQ(compileAndRun(options, &fromCache), 6.0f);
  EXPECT_FALSE(fromCache);
  EXPECT_TRUE(cachedObjects(cache.path()).empty());
  options.keepCompiled = true;
  EXPECT_EQ(compileAndRun(options, &fromCache), 6.0f);
  EXPECT_FALSE(fromCache);
  options.keepCompiled = false;
  EXPECT_EQ(compileAndRun(options, &fromCache), 6.0f);
  EXPECT_TRUE(fromCache);
}

TEST_F(HostJitTest, AChangedObjectIsCompiledAgain) {
  ObjectCache cache((scratch + "/objects").str());
  HostJit::Options options = keptIn(cache);
  EXPECT_EQ(compileAndRun(options), 6.0f);
  std::vector<std::string> files = cachedObjects(cache.path());
  ASSERT_EQ(files.size(), 1u);
  auto original = llvm::MemoryBuffer::getFile(files[0]);
  ASSERT_TRUE(original);
  std::string bytes = (*original)->getBuffer().str();

  // One byte of the code changed, then the file cut short: each is found,
  // said, compiled again and stored again.
  std::string changed = bytes;
  changed[changed.size() / 2] ^= 0x5a;
  for (const std::string &damaged : {changed, bytes.substr(0, bytes.size() / 3)}) {
    std::ofstream(files[0], std::ios::binary | std::ios::trunc) << damaged;
    bool fromCache = true;
    std::string warning;
    EXPECT_EQ(compileAndRun(options, &fromCache, &warning), 6.0f);
    EXPECT_FALSE(fromCache);
    EXPECT_NE(warning.find("is not the one stored"), std::string::npos) << warning;
    EXPECT_EQ(compileAndRun(options, &fromCache, &warning), 6.0f);
    EXPECT_TRUE(fromCache);
    EXPECT_EQ(warning, "");
  }
}

TEST_F(HostJitTest, ACacheThatCannotBeMadeIsSaidAndTheProgramRuns) {
  // A directory under a regular file cannot be made.
  std::string file = (scratch + "/file").str();
  std::ofstream(file) << "x";
  ObjectCache cache(file + "/objects");
  HostJit::Options options = keptIn(cache);
  bool fromCache = true;
  std::string warning;
  EXPECT_EQ(compileAndRun(options, &fromCache, &warning), 6.0f);
  EXPECT_FALSE(fromCache);
  EXPECT_NE(warning.find("cannot make the object cache " + file + "/objects"), std::string::npos)
      << warning;
}

TEST_F(HostJitTest, TheDefaultDirectoryFollowsTheEnvironment) {
  std::string saved = getenv(kObjectCacheEnv) ? getenv(kObjectCacheEnv) : "";
  std::string home = getenv("HOME") ? getenv("HOME") : "";
  std::string xdg = getenv("XDG_CACHE_HOME") ? getenv("XDG_CACHE_HOME") : "";
  setenv(kObjectCacheEnv, "off", 1);
  EXPECT_EQ(ObjectCache::defaultDirectory(), std::nullopt);
  setenv(kObjectCacheEnv, "/some/where", 1);
  EXPECT_EQ(ObjectCache::defaultDirectory(), std::optional<std::string>("/some/where"));
  unsetenv(kObjectCacheEnv);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(ObjectCache::defaultDirectory(), std::optional<std::string>("/xdg/pmlir/objects"));
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/user", 1);
  EXPECT_EQ(ObjectCache::defaultDirectory(),
            std::optional<std::string>("/home/user/.cache/pmlir/objects"));
  unsetenv("HOME");
  EXPECT_EQ(ObjectCache::defaultDirectory(), std::nullopt);
  for (auto [name, value] : {std::pair<const char *, const std::string &>{kObjectCacheEnv, saved},
                             {"HOME", home},
                             {"XDG_CACHE_HOME", xdg}})
    if (!value.empty())
      setenv(name, value.c_str(), 1);
}

} // namespace
