//===- Bytes.h - Byte counts and durations as people write them -*- C++ -*-===//
//
// Part of pmlir.
//
// Byte counts in messages ("1.5 GiB") and in flags ("12GiB", "800MB"), and
// durations in messages ("1.25 s", "3.40 ms").
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_BYTES_H
#define PMLIR_SUPPORT_BYTES_H

#include <optional>
#include <string>

namespace pmlir {

/// `bytes` in the largest binary unit below it, with `decimals` digits:
/// "1.5 GiB".
std::string formatBytes(double bytes, int decimals = 1);

/// The most bytes a byte count given by a user holds: 4 EiB. Counts past it
/// (1e30) would wrap the int64 byte counts they are compared with.
inline constexpr double kMaxByteCount = 4611686018427387904.0; // 2^62

/// A byte count: a number with an optional unit B, KB, MB, GB, TB (powers
/// of 1000) or KiB, MiB, GiB, TiB (powers of 1024), as "12GiB" or "1e9";
/// nullopt where `text` is none, not positive or past kMaxByteCount.
std::optional<double> parseBytes(const std::string &text);

/// `seconds` in s, ms or us, with two decimals (one for us): "3.40 ms".
std::string formatSeconds(double seconds);

} // namespace pmlir

#endif // PMLIR_SUPPORT_BYTES_H
