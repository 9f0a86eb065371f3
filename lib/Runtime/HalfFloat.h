//===- HalfFloat.h - bf16 and f16 to and from f32 -----------------*- C++ -*-===//
//
// Part of pmlir.
//
// MPI has no 16-bit float types, so the MPI backend reduces bf16 and f16 in
// f32 and rounds back to the nearest even, as GPUs do. Exact on every
// value: every bf16 and f16 is an f32.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_RUNTIME_HALFFLOAT_H
#define PMLIR_LIB_RUNTIME_HALFFLOAT_H

#include <cstdint>
#include <cstring>

namespace pmlir::rt {

inline uint32_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

inline float bitsFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// bf16 is the upper half of an f32.
inline float bf16ToFloat(uint16_t h) { return bitsFloat(uint32_t(h) << 16); }

inline uint16_t floatToBf16(float f) {
  uint32_t bits = floatBits(f);
  // Round to nearest, ties to even: add just under half an ulp, plus the
  // lowest kept bit; the carry may run into the exponent, as it should.
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  // A NaN stays one, quiet. (A select, not a branch: loops of it vectorize.)
  uint32_t quietNaN = (bits >> 16) | 0x0040u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quietNaN : rounded);
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) // infinity, NaN
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) // normal: rebias 15 -> 127
    return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero and subnormals: mantissa * 2^-24, exact in f32.
  return bitsFloat(sign | floatBits(float(mantissa) * 0x1p-24f));
}

inline uint16_t floatToF16(float f) {
  uint32_t bits = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) // NaN: keep it one, quiet
    return sign | 0x7e00u | static_cast<uint16_t>((magnitude >> 13) & 0x3ffu);
  if (magnitude >= 0x477ff000u) // 65520 and up round to infinity
    return sign | 0x7c00u;
  if (magnitude < 0x38800000u) {
    // Below the smallest normal (2^-14): adding 0.5 leaves an ulp of 2^-24,
    // the subnormals' step, so the float adder rounds to nearest even and
    // the sum's low bits are the result (0x400 is the smallest normal).
    float sum = bitsFloat(magnitude) + 0.5f;
    return sign | static_cast<uint16_t>(floatBits(sum) - floatBits(0.5f));
  }
  // Normal: rebias 127 -> 15 and round to nearest even on the 13 dropped
  // bits.
  uint32_t odd = (magnitude >> 13) & 1u;
  magnitude += (uint32_t(15 - 127) << 23) + 0xfffu + odd;
  return sign | static_cast<uint16_t>(magnitude >> 13);
}

} // namespace pmlir::rt

#endif // PMLIR_LIB_RUNTIME_HALFFLOAT_H
