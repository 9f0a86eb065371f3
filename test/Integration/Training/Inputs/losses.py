#!/usr/bin/env python3
"""Compares the losses two pmlir-run --train logs print for the same steps.

  losses.py A.log B.log [--tol T]

Prints the worst relative difference over the steps both logs hold and
exits non-zero past the tolerance or when they share no step.
"""
import argparse
import re
import sys


def losses(path):
    found = {}
    for line in open(path):
        m = re.match(r"step (\d+): loss ([-0-9.eE+naif]+),", line)
        if m:
            found[int(m.group(1))] = float(m.group(2))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--tol", type=float, default=1e-5)
    args = ap.parse_args()
    a, b = losses(args.a), losses(args.b)
    steps = sorted(set(a) & set(b))
    if not steps:
        print("no step in both logs")
        return 1
    worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in steps)
    ok = worst <= args.tol
    print(f"steps {steps[0]} to {steps[-1]}: worst relative loss difference {worst:.3g} "
          f"(tolerance {args.tol:g}): {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
