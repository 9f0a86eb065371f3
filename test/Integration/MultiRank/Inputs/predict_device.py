"""Checks the device memory of a pmlir-run --predict --device gpu --json report.

  predict_device.py JOB.json --context-mib C --communicator-mib M
                    [--groups N]

Each rank's peak is the CUDA context and the cuBLASLt workspace (32 MiB,
the runtime's), its NCCL communicators (one per group it communicates in, M
MiB each), its parameters, optimizer state and inputs (copied to the device
once) and its buffers at their heaviest point; no buffer is in a free heap
and no send is copied (NCCL sends from the buffer). The report's peak is the
heaviest rank's, and `fits` says whether it is within the device's memory
(where the profile knows it).
--groups N: every rank communicates in N groups. Prints 'predict device: ok'
or exits 1 naming what differs."""
import argparse
import json
import sys

MIB = 1 << 20
WORKSPACE = 32 * MIB


def fail(message):
    print(f"predict device: FAILED: {message}")
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--context-mib", type=float, required=True)
    ap.add_argument("--communicator-mib", type=float, required=True)
    ap.add_argument("--groups", type=int)
    args = ap.parse_args()
    r = json.load(open(args.report))
    if r["target"] != "gpu":
        fail(f"the target is {r['target']}")
    communicator = int(args.communicator_mib * MIB)
    for k in r["ranks"]:
        if k["process_bytes"] != int(args.context_mib * MIB) + WORKSPACE:
            fail(f"rank {k['rank']}: context and workspace {k['process_bytes']}")
        if k["communicator_bytes"] % communicator:
            fail(f"rank {k['rank']}: communicators of {k['communicator_bytes']} bytes")
        groups = k["communicator_bytes"] // communicator
        if args.groups is not None and groups != args.groups:
            fail(f"rank {k['rank']} communicates in {groups} groups, expected {args.groups}")
        if k["buffer_bytes_in_free_heap"] or k["send_copy_bytes"]:
            fail(f"rank {k['rank']}: a free heap or send copies on a GPU")
        parts = (k["process_bytes"] + k["communicator_bytes"] + k["parameter_bytes"] +
                 k["optimizer_state_bytes"] + k["input_bytes"] + k["buffer_bytes"])
        if k["peak_bytes"] != parts:
            fail(f"rank {k['rank']}'s peak {k['peak_bytes']} is not its parts {parts}")
        if k["buffer_bytes"] <= 0 or k["parameter_bytes"] <= 0:
            fail(f"rank {k['rank']} holds no buffers or no parameters")
    if r["peak_bytes"] != max(k["peak_bytes"] for k in r["ranks"]):
        fail("peak_bytes is not the heaviest rank's")
    # A profile with a topology knows its devices' memory.
    if "device_memory_bytes" in r and (
            r["fits"] != (r["peak_bytes"] <= r["device_memory_bytes"])):
        fail("fits does not say whether the peak is within the device's memory")
    print("predict device: ok")


if __name__ == "__main__":
    main()
