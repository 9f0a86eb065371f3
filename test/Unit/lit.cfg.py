# -*- Python -*-
# Runs the GoogleTest binaries under build/unittests as lit tests, so that one
# lit summary covers the whole suite.

import os

import lit.formats

config.name = "pmlir-unit"
config.suffixes = []
config.test_exec_root = os.path.join(config.pmlir_binary_dir, "unittests")
config.test_source_root = config.test_exec_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
