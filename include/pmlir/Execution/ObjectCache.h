//===- ObjectCache.h - Compiled programs kept on disk -----------*- C++ -*-===//
//
// Part of pmlir.
//
// The host's compiled objects, kept in a directory by a key that names all
// they were compiled from (HostJit: the module's bitcode, the CPU, LLVM's
// version, the optimization level), so that a program compiled once on a
// host is loaded, not compiled, by every later process that compiles the
// same module: a rerun, the runs of pmlir-plan's predictions, a job's
// ranks in later runs.
//
// Processes that miss at once each compile and store the same object
// (each written beside its path and renamed into place): no process waits
// on another, so the ranks of a job stay alike (all compiled or all
// loaded), which --predict, measuring each rank's process, relies on.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_OBJECTCACHE_H
#define PMLIR_EXECUTION_OBJECTCACHE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <string>

namespace pmlir::exec {

/// The environment variable that places the cache: a directory, or "off".
inline constexpr const char *kObjectCacheEnv = "PMLIR_OBJECT_CACHE";

/// pmlir's directory in the user's cache, where what it keeps between runs
/// goes (the objects, the CPU profile's measurements): $XDG_CACHE_HOME/pmlir,
/// else $HOME/.cache/pmlir; nullopt where neither is set.
std::optional<std::string> userCacheDirectory();

class ObjectCache {
public:
  /// $PMLIR_OBJECT_CACHE ("off": none), else userCacheDirectory()'s
  /// objects/; nullopt where there is none.
  static std::optional<std::string> defaultDirectory();

  explicit ObjectCache(std::string directory) : directory(std::move(directory)) {}
  const std::string &path() const { return directory; }

  /// The object kept under `key` (hex digits), checked against the digest
  /// stored with it; null where there is none, or with `warning` set where
  /// the file cannot be read or is not what was stored (cut short or
  /// changed on disk: it is then compiled and stored again).
  std::unique_ptr<llvm::MemoryBuffer> load(llvm::StringRef key, std::string &warning) const;
  /// Keeps `object` under `key`, then trims the directory to its size
  /// limit. false with `warning` where it cannot be kept (the directory
  /// cannot be made, a full disk): the program runs, it is only not kept.
  bool store(llvm::StringRef key, llvm::StringRef object, std::string &warning) const;

  /// The most bytes the directory's objects take; the least recently used
  /// go first, and any unused for a week.
  static constexpr uint64_t kMaxBytes = uint64_t(1) << 30;

private:
  std::string fileOf(llvm::StringRef key) const;
  std::string directory;
};

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_OBJECTCACHE_H
