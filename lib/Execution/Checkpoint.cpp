//===- Checkpoint.cpp - A training run's checkpoint, whole or refused -----===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Checkpoint.h"
#include "pmlir/Support/OutputFile.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

using namespace pmlir;

namespace {

/// The metadata key of the manifest, in both files.
constexpr const char *kManifestKey = "pmlir.manifest";

size_t bytesOf(const TensorToWrite &t) {
  size_t n = dtypeSize(t.dtype);
  for (int64_t d : t.shape)
    n *= static_cast<size_t>(d);
  return n;
}

/// {"parameters": {name: crc}, "optimizer": {name: crc}}: one object per
/// file, in the files' order.
nlohmann::ordered_json manifestOf(const std::vector<TensorToWrite> &parameters,
                                  const std::vector<TensorToWrite> &optimizer) {
  nlohmann::ordered_json manifest = nlohmann::ordered_json::object();
  for (auto [key, tensors] : {std::pair{"parameters", &parameters}, {"optimizer", &optimizer}}) {
    nlohmann::ordered_json sums = nlohmann::ordered_json::object();
    for (const TensorToWrite &t : *tensors)
      sums[t.name] = exec::checksumOf(t.data, bytesOf(t));
    manifest[key] = std::move(sums);
  }
  return manifest;
}

/// The manifest of `file`, parsed; null when it has none; a message in
/// `error` when it is not a manifest.
std::optional<nlohmann::json> readManifest(const SafeTensorsFile &file, std::string &error) {
  auto it = file.metadata().find(kManifestKey);
  if (it == file.metadata().end())
    return nlohmann::json();
  nlohmann::json manifest = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  bool valid = manifest.is_object() && manifest.size() == 2;
  for (const char *key : {"parameters", "optimizer"})
    if (valid && manifest.contains(key) && manifest[key].is_object()) {
      for (auto &entry : manifest[key].items())
        valid &= entry.value().is_string();
    } else {
      valid = false;
    }
  if (!valid) {
    error = file.path() + " has a corrupt manifest (metadata '" + kManifestKey + "')";
    return std::nullopt;
  }
  return manifest;
}

/// Every tensor of `file` is in `sums` (the manifest's part for it), with
/// its checksum if `readTensors`, and every tensor `sums` lists is in
/// `file`.
bool matchesManifest(const SafeTensorsFile &file, const nlohmann::json &sums, bool readTensors,
                     std::string &error) {
  for (const TensorView &t : file.tensors()) {
    auto it = sums.find(t.name);
    if (it == sums.end()) {
      error = file.path() + " holds tensor '" + t.name + "', which its save did not write";
      return false;
    }
    if (readTensors && exec::checksumOf(t.data, t.bytes) != it->get<std::string>()) {
      error = "tensor '" + t.name + "' in " + file.path() +
              " does not match the checksum its save recorded: the file is corrupt";
      return false;
    }
  }
  for (auto &entry : sums.items())
    if (!file.find(entry.key())) {
      error = file.path() + " lacks tensor '" + entry.key() + "', which its save wrote";
      return false;
    }
  return true;
}

} // namespace

std::string exec::checksumOf(const void *data, size_t bytes) {
  uint32_t crc = llvm::crc32(llvm::ArrayRef(static_cast<const uint8_t *>(data), bytes));
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format_hex_no_prefix(crc, 8);
  return text;
}

std::string exec::optimizerStatePath(const std::string &parameters) {
  llvm::StringRef path(parameters);
  path.consume_back(".safetensors");
  return (path + ".optimizer.safetensors").str();
}

bool exec::writeCheckpoint(const std::string &path, const std::vector<TensorToWrite> &parameters,
                           const std::vector<TensorToWrite> &optimizer, std::string &error,
                           const std::function<void()> &staged) {
  std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {kManifestKey, manifestOf(parameters, optimizer).dump()}};
  // Both files whole on the disk before either replaces the previous
  // checkpoint's.
  std::unique_ptr<OutputFile> state =
      stageSafeTensors(optimizerStatePath(path), optimizer, metadata, error);
  if (!state)
    return false;
  std::unique_ptr<OutputFile> weights = stageSafeTensors(path, parameters, metadata, error);
  if (!weights)
    return false;
  if (staged)
    staged();
  return state->commit(error) && weights->commit(error);
}

bool exec::exportHuggingFace(const std::string &directory, const std::string &config,
                             const std::vector<TensorToWrite> &parameters, std::string &error) {
  bool created = ::mkdir(directory.c_str(), 0777) == 0;
  if (!created && errno != EEXIST) {
    error = directory + ": " + std::strerror(errno);
    return false;
  }
  // The files' temporaries are gone when this returns.
  bool written = [&] {
    std::unique_ptr<OutputFile> weights =
        stageSafeTensors(directory + "/model.safetensors", parameters, {{"format", "pt"}}, error);
    if (!weights)
      return false;
    std::unique_ptr<OutputFile> json = OutputFile::open(directory + "/config.json", error);
    if (!json)
      return false;
    json->write(config + "\n");
    if (!json->finish(error))
      return false;
    return weights->commit(error) && json->commit(error);
  }();
  // A directory made for an export that failed goes with it (empty).
  if (!written && created)
    ::rmdir(directory.c_str());
  return written;
}

bool exec::checkCheckpoint(const SafeTensorsFile &parameters, const SafeTensorsFile &optimizer,
                           bool readTensors, std::string &error) {
  std::optional<nlohmann::json> ofParameters = readManifest(parameters, error);
  if (!ofParameters)
    return false;
  std::optional<nlohmann::json> ofOptimizer = readManifest(optimizer, error);
  if (!ofOptimizer)
    return false;
  if (ofParameters->is_null() && ofOptimizer->is_null())
    return true;
  if (*ofParameters != *ofOptimizer) {
    error = parameters.path() + " and " + optimizer.path() +
            " are not of one save (a save that did not finish, or files mixed by hand): "
            "resume from a whole checkpoint";
    return false;
  }
  return matchesManifest(parameters, (*ofParameters)["parameters"], readTensors, error) &&
         matchesManifest(optimizer, (*ofParameters)["optimizer"], readTensors, error);
}
