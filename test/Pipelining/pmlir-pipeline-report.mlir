// pmlir-pipeline-report runs the module's schedule in the simulator. 1F1B
// on 2 ranks over 2 microbatches, F = 1 and B = I + W = 2: the makespan is
// (m + p - 1) x 3 = 9, each rank busy 6 of it, and the bubble the
// formula's (p - 1) / (m + p - 1) = 1/3. Stage 0 holds both microbatches'
// activations before its first backward.
// RUN: pmlir-opt %s --pmlir-pipeline-report -o /dev/null | FileCheck %s
// CHECK: "bubble": 0.333333
// CHECK: "busy": [
// CHECK-NEXT: 6,
// CHECK-NEXT: 6
// CHECK: "formula_bubble": 0.333333
// CHECK: "makespan": 9,
// CHECK: "peak_in_flight": [
// CHECK-NEXT: 2,
// CHECK-NEXT: 1
// CHECK: "action": "0F0",
// CHECK-NEXT: "end": 1,

// A transfer's delay lengthens the step where the critical path crosses
// ranks: rank 1's first forward waits for its activations, rank 0's last
// backward for its gradient: 9 + 2 x 0.5 = 10.
// RUN: pmlir-opt %s --pmlir-pipeline-report=transfer=0.5 -o /dev/null | FileCheck %s --check-prefix=TRANSFER
// TRANSFER: "makespan": 10,

// Costs are finite and not negative: an infinite one once wrote a NaN
// bubble (not JSON), a negative one ended actions before they started.
// RUN: not pmlir-opt %s --pmlir-pipeline-report=forward=inf -o /dev/null 2>&1 | FileCheck %s --check-prefix=INF
// INF: error: pmlir-pipeline-report: forward must be a finite cost of 0 or more, not INF
// RUN: not pmlir-opt %s --pmlir-pipeline-report=backward-weight=-1 -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: pmlir-pipeline-report: backward-weight must be a finite cost of 0 or more, not -1.00
// RUN: not pmlir-opt %s --pmlir-pipeline-report=transfer=nan -o /dev/null 2>&1 | FileCheck %s --check-prefix=NAN
// NAN: error: pmlir-pipeline-report: transfer must be a finite cost of 0 or more, not nan
// Finite costs whose step overflows a double are refused too, and no
// report is written.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not pmlir-opt %s --pmlir-pipeline-report="output=%t/report.json forward=1e308 transfer=1e308" -o %t/out.mlir 2>&1 | FileCheck %s --check-prefix=OVERFLOW
// OVERFLOW: error: pmlir-pipeline-report: the simulated step's time overflows (its makespan is INF): the costs are too large to add up
// RUN: not test -e %t/report.json
pipe.schedule "1f1b" ranks 2 stages 2 microbatches 2
    [["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]
