#!/usr/bin/env python3
"""mlp.py weights OUT.safetensors | compare A.safetensors B.safetensors TOL

weights: writes random MLP weights and input under the names of mlp.mlir.
compare: prints the relative error of `logits` in B against A and exits
non-zero above TOL."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "CPU"))
import torch  # noqa: E402
from reference import read_safetensors, write_safetensors  # noqa: E402

if sys.argv[1] == "weights":
    g = torch.Generator().manual_seed(3)
    write_safetensors(sys.argv[2], {
        "x": torch.randn(2, 5, 16, generator=g),
        "fc1.weight": torch.randn(16, 64, generator=g) / 4,
        "fc1.bias": torch.randn(64, generator=g) / 10,
        "fc2.weight": torch.randn(64, 16, generator=g) / 8,
        "fc2.bias": torch.randn(16, generator=g) / 10,
    })
else:
    a = read_safetensors(sys.argv[2])["logits"].double()
    b = read_safetensors(sys.argv[3])["logits"].double()
    err = ((a - b).norm() / a.norm()).item()
    print(f"relative error {err:.2e}")
    sys.exit(0 if err <= float(sys.argv[4]) else 1)
