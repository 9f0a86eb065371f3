#!/usr/bin/env bash
# Installs, builds and runs the whole test suite (lit tests and GoogleTest unit
# tests under one lit run, whose summary line ends the output).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --build build --target check-pmlir
# The suite runs as root in CI: no tool may have replaced the device node.
if [ ! -c /dev/null ]; then
  echo "pmlir: /dev/null is no longer a character device after the suite" >&2
  exit 1
fi
