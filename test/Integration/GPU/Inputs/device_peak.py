"""Holds a --predict --device gpu report against the run's printed device peak.

  device_peak.py PREDICTED.json RUN.out CONTEXT_MIB

The run prints 'peak device memory (tensors and the GEMM workspace): X'; the
prediction's peak less the context and the communicators is the same within
5%."""
import json
import re
import sys

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def main():
    predicted = json.load(open(sys.argv[1]))
    context = int(sys.argv[3]) << 20
    text = open(sys.argv[2]).read()
    found = re.search(r"peak device memory \(tensors and the GEMM workspace\): ([0-9.]+) (\w+)",
                      text)
    if not found:
        sys.exit("the run printed no peak device memory:\n" + text)
    measured = float(found.group(1)) * UNITS[found.group(2)]
    rank = predicted["ranks"][0]
    expected = rank["peak_bytes"] - context - rank["communicator_bytes"]
    error = (expected - measured) / measured
    verdict = "ok" if abs(error) <= 0.05 else f"FAILED ({error:+.1%})"
    print(f"device memory: predicted {expected / 2**20:.1f} MiB, "
          f"measured {measured / 2**20:.1f} MiB: {verdict}")


if __name__ == "__main__":
    main()
