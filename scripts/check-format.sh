#!/usr/bin/env bash
# Fails when C++ lines changed since BASE (default: the previous commit, or
# $PMLIR_FORMAT_BASE) do not follow .clang-format; prints the fix as a diff.
# Only changed lines are checked, so old code is reformatted as it is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-${PMLIR_FORMAT_BASE:-HEAD~1}}
if ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  echo "check-format: no commit '$base' to compare with; nothing to check"
  exit 0
fi
diff=$(git clang-format --quiet --diff --extensions c,cc,cpp,h "$base" -- include lib tools \
  unittests fuzz bench || true)
if [ -n "$diff" ] && [ "$diff" != "no modified files to format" ]; then
  echo "$diff"
  echo "check-format: lines changed since $base are not formatted (git clang-format $base)" >&2
  exit 1
fi
echo "check-format: lines changed since $base are formatted"
