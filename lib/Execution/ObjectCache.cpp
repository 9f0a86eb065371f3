//===- ObjectCache.cpp - Compiled programs kept on disk -------------------===//
//
// Part of pmlir.
//
// An entry is the file "llvmcache-KEY" (the prefix LLVM's cache pruning
// looks for): the object, then the BLAKE3 digest of the object and a
// magic word, so that a file cut short or changed on disk is known and
// compiled again instead of loaded.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/ObjectCache.h"

#include "llvm/Support/BLAKE3.h"
#include "llvm/Support/CachePruning.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace pmlir::exec;

namespace {

constexpr llvm::StringLiteral kMagic = "pmlirobj";
constexpr size_t kDigestBytes = 32;

std::string digestOf(llvm::StringRef bytes) {
  llvm::BLAKE3 hasher;
  hasher.update(bytes);
  llvm::BLAKE3Result<kDigestBytes> digest = hasher.final();
  return std::string(reinterpret_cast<const char *>(digest.data()), digest.size());
}

} // namespace

std::optional<std::string> pmlir::exec::userCacheDirectory() {
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(path, home, ".cache");
  else
    return std::nullopt;
  llvm::sys::path::append(path, "pmlir");
  return std::string(path);
}

std::optional<std::string> ObjectCache::defaultDirectory() {
  if (const char *set = std::getenv(kObjectCacheEnv); set && *set) {
    if (llvm::StringRef(set) == "off")
      return std::nullopt;
    return std::string(set);
  }
  std::optional<std::string> user = userCacheDirectory();
  if (!user)
    return std::nullopt;
  return *user + "/objects";
}

std::string ObjectCache::fileOf(llvm::StringRef key) const {
  llvm::SmallString<256> file(directory);
  llvm::sys::path::append(file, "llvmcache-" + key);
  return std::string(file);
}

std::unique_ptr<llvm::MemoryBuffer> ObjectCache::load(llvm::StringRef key,
                                                      std::string &warning) const {
  std::string file = fileOf(key);
  if (!llvm::sys::fs::exists(file))
    return nullptr;
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> read =
      llvm::MemoryBuffer::getFile(file, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!read) {
    warning = "cannot read the cached object " + file + ": " + read.getError().message();
    return nullptr;
  }
  llvm::StringRef bytes = (*read)->getBuffer();
  size_t trailer = kDigestBytes + kMagic.size();
  if (bytes.size() <= trailer || !bytes.ends_with(kMagic) ||
      digestOf(bytes.drop_back(trailer)) !=
          bytes.drop_back(kMagic.size()).take_back(kDigestBytes)) {
    warning = "the cached object " + file +
              " is not the one stored (cut short or changed on disk): compiling it again";
    return nullptr;
  }
  // Used now: the last to go when the directory is trimmed.
  if (int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    (void)llvm::sys::fs::setLastAccessAndModificationTime(fd, std::chrono::system_clock::now());
    ::close(fd);
  }
  return llvm::MemoryBuffer::getMemBufferCopy(bytes.drop_back(trailer), file);
}

bool ObjectCache::store(llvm::StringRef key, llvm::StringRef object, std::string &warning) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory)) {
    warning = "cannot make the object cache " + directory + ": " + ec.message();
    return false;
  }
  std::string file = fileOf(key);
  std::string temporary = file + ".tmp." + std::to_string(getpid());
  std::error_code ec;
  {
    llvm::raw_fd_ostream out(temporary, ec, llvm::sys::fs::OF_None);
    if (!ec) {
      out << object << digestOf(object) << kMagic;
      out.close();
      if (out.has_error())
        ec = out.error();
      out.clear_error();
    }
  }
  if (!ec && ::rename(temporary.c_str(), file.c_str()) != 0)
    ec = std::error_code(errno, std::generic_category());
  if (ec) {
    warning = "cannot keep the compiled object in " + directory + ": " + ec.message();
    ::unlink(temporary.c_str());
    return false;
  }
  llvm::CachePruningPolicy policy;
  policy.MaxSizeBytes = kMaxBytes;
  llvm::pruneCache(directory, policy);
  return true;
}
