//===- Nesting.h - How deeply a text nests its brackets -----------*- C++ -*-===//
//
// Part of pmlir.
//
// Recursive readers (MLIR's parser, nlohmann's JSON printer) use stack per
// level, so inputs are refused past a depth before they are read. One scan
// serves both syntaxes: brackets inside "string literals" do not count, and
// with `mlir` set neither do // comments nor the '>' of "->".
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_NESTING_H
#define PMLIR_SUPPORT_NESTING_H

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace pmlir {

/// The deepest nesting of {} and [] (JSON), and with `mlir` also () and <>.
inline size_t bracketDepth(std::string_view text, bool mlir) {
  size_t depth = 0, deepest = 0;
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < n && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (mlir && c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n')
        ++i;
    } else if (c == '{' || c == '[' || (mlir && (c == '(' || c == '<'))) {
      deepest = std::max(deepest, ++depth);
    } else if ((c == '}' || c == ']' ||
                (mlir && (c == ')' || (c == '>' && (i == 0 || text[i - 1] != '-'))))) &&
               depth > 0) {
      --depth;
    }
  }
  return deepest;
}

} // namespace pmlir

#endif // PMLIR_SUPPORT_NESTING_H
