#!/usr/bin/env python3
"""Reads the comm and memory reports of a ZeRO training step and compares
them with ZeRO's formulas.

  zero_reports.py COMM.json MEMORY.json
"""
import json
import sys


def main():
    comm = json.load(open(sys.argv[1]))["training"]
    memory = json.load(open(sys.argv[2]))["training"][0]["model_state"]
    stage, psi, n = comm["zero_stage"], comm["psi_bytes_per_rank"], comm["dp"]
    factor = 3 if stage == 3 else 2
    got, want = comm["dp_wire_bytes_per_rank"], comm["dp_expected_wire_bytes_per_rank"]
    close = abs(got - want) <= 0.08 * want
    print(f"ZeRO-{stage}: dp wire bytes {got} against {factor} Psi (n - 1) / n = {want}: "
          f"{'within 8%' if close else 'OFF'}")
    blocks = comm.get("tp_blocks", [])
    same = blocks and all(b["wire_bytes_per_rank"] == comm["tp_block_expected_wire_bytes_per_rank"]
                          for b in blocks)
    print(f"tp wire bytes of each block equal 4 all-reduces of b s h: {'yes' if same else 'no'}")
    formula = {1: "4 Psi + 4 Psi + 8 Psi / n", 2: "4 Psi + 12 Psi / n", 3: "16 Psi / n"}[stage]
    got, want = memory["bytes_per_rank"], memory["zero_formula_bytes_per_rank"]
    close = abs(got - want) <= 0.01 * want
    print(f"model state {got} bytes per rank against {formula} = {want}: "
          f"{'within 1%' if close else 'OFF'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
