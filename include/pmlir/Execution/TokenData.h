//===- TokenData.h - Training windows from a flat file of token ids -*- C++ -*-===//
//
// Part of pmlir.
//
// A training corpus as nanoGPT keeps it: token ids one after another in a
// flat binary file (uint16, or int32 for vocabularies past 65535). A batch
// is rows of consecutive windows of seq + 1 tokens: the first seq are the
// inputs, the last seq the labels (the next token of each position). Row r
// of the batch of step s is window s * rows + r (modulo the windows the
// file holds), so a run resumed at step s reads what the uninterrupted run
// would have read. Pure C++.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_TOKENDATA_H
#define PMLIR_EXECUTION_TOKENDATA_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace pmlir::exec {

/// How a token file stores its ids: nanoGPT's uint16, or int32 for
/// vocabularies past 65,536.
enum class TokenDtype { UInt16, Int32 };

class TokenData {
public:
  ~TokenData();
  /// Maps `path` of token ids of `dtype`. Fails with a message naming the
  /// file on a size that is no whole number of ids, or fewer than `seq` + 1
  /// tokens (one window).
  static std::unique_ptr<TokenData> open(const std::string &path, TokenDtype dtype, int64_t seq,
                                         std::string &error);
  int64_t tokens() const { return count; }
  /// The number of windows of seq + 1 tokens, one token apart at their ends.
  int64_t windows() const { return (count - 1) / seq; }
  /// Writes `rows` windows from window `first` on: row r's inputs to
  /// ids[r * seq, ...) and its labels to labels[r * seq, ...), as int64
  /// (`wide`) or int32. The ids are the caller's to have checked
  /// (firstOutside).
  void fill(int64_t first, int64_t rows, bool wide, void *ids, void *labels) const;
  /// The first id outside [0, vocab) (an int32 file's may be negative) of
  /// the `count` windows from window
  /// `first` on (each window read once, however many times they wrap),
  /// with its flat index in `at` and the window's place among the `count`
  /// in `ordinal`; nullopt where every id is inside. What a run's fills
  /// will meet, found before its first step.
  std::optional<int64_t> firstOutside(int64_t first, int64_t count, int64_t vocab, int64_t &at,
                                      int64_t &ordinal) const;

private:
  TokenData() = default;
  int64_t token(int64_t i) const;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  bool wideIds = false;
  int64_t count = 0, seq = 0;
};

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_TOKENDATA_H
