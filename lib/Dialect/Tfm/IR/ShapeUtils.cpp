//===- ShapeUtils.cpp - Shape rules shared by tfm verifiers ---------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/ShapeUtils.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "llvm/Support/raw_ostream.h"

using namespace pmlir::tfm;

std::string pmlir::tfm::formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (mlir::ShapedType::isDynamic(d))
          os << '?';
        else
          os << d;
      },
      ", ");
  os << ']';
  return text;
}

bool pmlir::tfm::dimsAgree(int64_t a, int64_t b) {
  return a == b || mlir::ShapedType::isDynamic(a) ||
         mlir::ShapedType::isDynamic(b);
}

bool pmlir::tfm::shapesAgree(llvm::ArrayRef<int64_t> a,
                             llvm::ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip_equal(a, b))
    if (!dimsAgree(x, y))
      return false;
  return true;
}

bool pmlir::tfm::isTrailingSuffix(llvm::ArrayRef<int64_t> shape,
                                  llvm::ArrayRef<int64_t> suffix) {
  if (suffix.size() > shape.size())
    return false;
  return shapesAgree(shape.take_back(suffix.size()), suffix);
}

std::optional<Shape>
pmlir::tfm::inferMatmulShape(llvm::ArrayRef<int64_t> lhs,
                             llvm::ArrayRef<int64_t> rhs, bool transposeLhs,
                             bool transposeRhs, std::string &error) {
  llvm::raw_string_ostream os(error);
  if (lhs.size() < 2) {
    os << "operand 'lhs' must have rank >= 2 ([batch..., M, K]), got "
       << formatShape(lhs);
    return std::nullopt;
  }
  if (rhs.size() < 2) {
    os << "operand 'rhs' must have rank >= 2 ([K, N] or [batch..., K, N]), got "
       << formatShape(rhs);
    return std::nullopt;
  }
  llvm::ArrayRef<int64_t> batch = lhs.drop_back(2);
  // A rank-2 rhs is shared by every batch element; a batched rhs must carry
  // exactly lhs's batch dimensions.
  if (rhs.size() != 2 && !shapesAgree(rhs.drop_back(2), batch)) {
    os << "operand 'rhs' batch dimensions: expected " << formatShape(batch)
       << " (those of 'lhs') or none, got " << formatShape(rhs.drop_back(2));
    return std::nullopt;
  }
  size_t r = lhs.size();
  int64_t m = transposeLhs ? lhs[r - 1] : lhs[r - 2];
  int64_t kLhs = transposeLhs ? lhs[r - 2] : lhs[r - 1];
  size_t q = rhs.size();
  int64_t kRhs = transposeRhs ? rhs[q - 1] : rhs[q - 2];
  int64_t n = transposeRhs ? rhs[q - 2] : rhs[q - 1];
  if (!dimsAgree(kLhs, kRhs)) {
    os << "contracting dimension of operand 'rhs': expected " << kLhs
       << " (K of 'lhs' " << formatShape(lhs) << "), got " << kRhs << " in "
       << formatShape(rhs);
    return std::nullopt;
  }
  Shape result(batch.begin(), batch.end());
  result.push_back(m);
  result.push_back(n);
  return result;
}
