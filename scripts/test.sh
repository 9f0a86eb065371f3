#!/usr/bin/env bash
# Installs, builds and runs the whole test suite (lit tests and GoogleTest unit
# tests under one lit run, whose summary line ends the output).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --build build --target check-pmlir
