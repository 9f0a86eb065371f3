//===- Bytes.cpp - Byte counts and durations as people write them ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/Bytes.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

std::string pmlir::formatBytes(double bytes, int decimals) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6)
    bytes /= 1024, ++u;
  char text[48];
  std::snprintf(text, sizeof(text), "%.*f %s", decimals, bytes, units[u]);
  return text;
}

std::string pmlir::formatSeconds(double seconds) {
  char text[48];
  if (std::abs(seconds) >= 1)
    std::snprintf(text, sizeof(text), "%.2f s", seconds);
  else if (std::abs(seconds) >= 1e-3)
    std::snprintf(text, sizeof(text), "%.2f ms", seconds * 1e3);
  else
    std::snprintf(text, sizeof(text), "%.1f us", seconds * 1e6);
  return text;
}

std::optional<double> pmlir::parseBytes(const std::string &text) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str())
    return std::nullopt;
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ')
    unit.erase(unit.begin());
  static const std::pair<const char *, double> units[] = {
      {"", 1},      {"B", 1},         {"KB", 1e3},      {"MB", 1e6},      {"GB", 1e9},
      {"TB", 1e12}, {"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1099511627776.0}};
  for (auto [name, scale] : units)
    if (unit == name) {
      double bytes = value * scale;
      if (!std::isfinite(bytes) || bytes <= 0 || bytes > kMaxByteCount)
        return std::nullopt;
      return bytes;
    }
  return std::nullopt;
}
