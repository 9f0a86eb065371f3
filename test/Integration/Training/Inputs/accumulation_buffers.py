"""Checks that accumulating gradients over more microbatches keeps no more
buffers live: `pmlir-run --predict --json` of one step over FEW and of one
over MANY microbatches (each its own JSON file). A running sum holds one
microbatch's gradients beside the sum, whatever the count; a program that
kept each microbatch's gradients until the last would grow by at least a
microbatch's gradients (the parameters' bytes, gradients being f32 like
them) for each one more.

Usage: accumulation_buffers.py FEW.json MANY.json
"""

import json
import sys


def rank0(path):
    with open(path) as f:
        return json.load(f)["ranks"][0]


few, many = rank0(sys.argv[1]), rank0(sys.argv[2])
growth = many["buffer_bytes"] - few["buffer_bytes"]
one_microbatch = few["parameter_bytes"]
if growth >= one_microbatch:
    sys.exit(f"accumulation: more microbatches keep {growth} more bytes of buffers live, "
             f"at least one microbatch's gradients ({one_microbatch} bytes)")
print("accumulation: ok")
