// Schedules for a GPT-2 gradient function cut into 2 stages: generated
// (1F1B), read from torch.distributed.pipelining's CSV, and zero-bubble,
// whose backward fragments split into I (what the gradient sent to stage 0
// needs) and W (the weight gradients, which read what I leaves them).
// RUN: rm -rf %t && mkdir -p %t
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-pipeline-partition="entry=grad stages=2" -o %t/stages.mlir
// RUN: pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=1f1b microbatches=2" | FileCheck %s --check-prefix=1F1B
// 1F1B: pipe.schedule "1f1b" ranks 2 stages 2 microbatches 2 {{\[}}["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]

// RUN: printf '0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n' > %t/ok.csv
// RUN: pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=csv csv=%t/ok.csv microbatches=2" | FileCheck %s --check-prefix=CSV
// CSV: pipe.schedule "csv" ranks 2 stages 2 microbatches 2 {{\[}}["0F0", "0F1", "0B0", "0B1"], ["1F0", "1B0", "1F1", "1B1"]]

// RUN: pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=zb-h1 microbatches=1" | FileCheck %s --check-prefix=ZB
// ZB: pipe.fragment stage 1 "F"
// ZB: %[[I1:.*]]:{{[0-9]+}} = pipe.fragment stage 1 "I"
// ZB-NOT: weight_grad
// ZB:   tfm.layernorm_grad
// ZB:   tfm.layer 1 backward
// ZB-NOT: weight_grad
// ZB:   pipe.yield
// ZB: pipe.fragment stage 1 "W"
// ZB:   tfm.weight_grad %[[I1]]#0,
// ZB:   tfm.layer 1 backward
// ZB:     tfm.weight_grad
// ZB: %[[DX:.*]] = pipe.transfer %[[I1]]#{{[0-9]+}} from 1 to 0
// ZB: pipe.fragment stage 0 "I" {
// ZB-NEXT: }
// ZB: pipe.fragment stage 0 "W"
// ZB:   tfm.layer 0 backward
// ZB:     tfm.matmul %[[DX]],
// ZB: pipe.schedule "zb-h1" ranks 2 stages 2 microbatches 1 {{\[}}["0F0", "0I0", "0W0"], ["1F0", "1I0", "1W0"]]

// A forward repeated over microbatches (inference) runs the schedule's
// forwards alone, whatever the generator; its CSV names forwards alone.
// RUN: pmlir-gen gpt2 --layers 4 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 \
// RUN:   | pmlir-opt --pmlir-pipeline-partition="stages=4" --pmlir-microbatch="microbatches=2" -o %t/forward.mlir
// RUN: pmlir-opt %t/forward.mlir --pmlir-pipeline-schedule="schedule=interleaved-1f1b virtual-stages=2 microbatches=2" | FileCheck %s --check-prefix=FORWARD
// FORWARD: pipe.schedule "interleaved-1f1b" ranks 2 stages 4 microbatches 2 {{\[}}["0F0", "0F1", "2F0", "2F1"], ["1F0", "1F1", "3F0", "3F1"]]
// RUN: printf '0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n' > %t/backward.csv
// RUN: pmlir-gen gpt2 --layers 2 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 \
// RUN:   | pmlir-opt --pmlir-pipeline-partition="stages=2" --pmlir-microbatch="microbatches=2" -o %t/forward2.mlir
// RUN: not pmlir-opt %t/forward2.mlir --pmlir-pipeline-schedule="schedule=csv csv=%t/backward.csv microbatches=2" 2>&1 | FileCheck %s --check-prefix=FORWARD-CSV
// FORWARD-CSV: error: pmlir-pipeline-schedule: the schedule runs backward actions, but @forward is a forward (no backward fragments): give it forwards alone
// RUN: printf '0F0,0F1\n1F0,1F1\n' > %t/forward.csv
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=csv csv=%t/forward.csv microbatches=2" 2>&1 | FileCheck %s --check-prefix=NO-BACKWARD
// NO-BACKWARD: error: pmlir-pipeline-schedule: the schedule runs no backward, but @grad has backward fragments
// RUN: not pmlir-opt %t/forward2.mlir --pmlir-pipeline-schedule="schedule=1f1b microbatches=4" 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: error: pmlir-pipeline-schedule: the schedule runs 4 microbatches, but @forward is repeated over 2 (pmlir-microbatch, or the training step's grad-accum)

// ZB-V on 2 ranks: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2.
// RUN: pmlir-gen gpt2 --layers 4 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-pipeline-partition="entry=grad stages=4" \
// RUN:       --pmlir-pipeline-schedule="schedule=zb-v virtual-stages=2 microbatches=2" | FileCheck %s --check-prefix=ZBV
// ZBV: pipe.schedule "zb-v" ranks 2 stages 4 microbatches 2 {{\[}}["0F0", "0F1", "3F0", "3I0", "3W0", "3F1", "3I1", "3W1", "0I0", "0W0", "0I1", "0W1"], ["1F0", "2F0", "1F1", "2F1", "2I0", "2W0", "1I0", "1W0", "2I1", "2W1", "1I1", "1W1"]]
// With meeting-transfers, the same schedule with its transfers, each SEND
// where the simulator meets its RECV: stage 2's second forward goes to
// stage 3 after stage 2's first I, when rank 0 asks for it (3RECV_F1).
// RUN: pmlir-gen gpt2 --layers 4 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-pipeline-partition="entry=grad stages=4" \
// RUN:       --pmlir-pipeline-schedule="schedule=zb-v virtual-stages=2 microbatches=2 meeting-transfers=true" | FileCheck %s --check-prefix=ZBV-MEET
// ZBV-MEET: pipe.schedule "zb-v" ranks 2 stages 4 microbatches 2 {{\[}}["0F0", "0SEND_F0", "0F1", "0SEND_F1", "3RECV_F0", "3F0", "3I0", "3SEND_B0", "3W0", "3RECV_F1", "3F1", "3I1", "3W1", "3SEND_B1", "0RECV_B0", "0I0", "0W0", "0RECV_B1", "0I1", "0W1"], ["1RECV_F0", "1F0", "2F0", "2SEND_F0", "1RECV_F1", "1F1", "2F1", "2RECV_B0", "2I0", "2SEND_F1", "2W0", "1I0", "1W0", "1SEND_B0", "2RECV_B1", "2I1", "2W1", "1I1", "1SEND_B1", "1W1"]]
// A CSV's own transfers stay where it puts them.
// RUN: printf '0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1\n' > %t/transfers.csv
// RUN: pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=csv csv=%t/transfers.csv microbatches=2 meeting-transfers=true" | FileCheck %s --check-prefix=OWN
// OWN: pipe.schedule "csv" ranks 2 stages 2 microbatches 2 {{\[}}["0F0", "0SEND_F0", "0F1", "0SEND_F1", "0RECV_B0", "0B0", "0RECV_B1", "0B1"], ["1RECV_F0", "1F0", "1B0", "1SEND_B0", "1RECV_F1", "1F1", "1B1", "1SEND_B1"]]
// RUN: pmlir-gen gpt2 --layers 4 --hidden 16 --heads 2 --vocab 11 --seq 4 --batch 1 --max-positions 8 --loss \
// RUN:   | pmlir-opt --pmlir-autodiff --pmlir-pipeline-partition="entry=grad stages=2" \
// RUN:   | not pmlir-opt --pmlir-pipeline-schedule="schedule=zb-v microbatches=2" 2>&1 | FileCheck %s --check-prefix=ZBV-ONE
// ZBV-ONE: error: pmlir-pipeline-schedule: schedule zb-v runs two stages per rank (rank r holds stages r and 2 ranks - 1 - r), not 1: give 2 virtual stages

// Bad input: a CSV that deadlocks, one that leaves out a microbatch, one
// that cannot be read, an unknown generator, a second schedule, no stages.
// RUN: printf '0F0,0B0,0F1,0B1\n1F0,1F1,1B1,1B0\n' > %t/deadlock.csv
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=csv csv=%t/deadlock.csv microbatches=2" 2>&1 | FileCheck %s --check-prefix=DEADLOCK
// DEADLOCK: error: pmlir-pipeline-schedule: the schedule deadlocks: rank 0 waits at 0RECV_B0 for 1SEND_B0 (on rank 1); rank 1 waits at 1RECV_F1 for 0SEND_F1 (on rank 0)
// RUN: printf '0F0,0B0\n1F0,1B0\n' > %t/missing.csv
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=csv csv=%t/missing.csv microbatches=2" 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: pmlir-pipeline-schedule: no rank runs 0F1 (stage 0's F of microbatch 1)
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=csv csv=%t/none.csv microbatches=2" 2>&1 | FileCheck %s --check-prefix=NO-FILE
// NO-FILE: error: pmlir-pipeline-schedule: cannot read the schedule '{{.*}}none.csv':
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=zb-h2" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: for the --schedule option: Cannot find option named 'zb-h2'
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=none" 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: error: pmlir-pipeline-schedule: schedule=none schedules nothing: give a generator or csv
// Counts: virtual-stages=0 divided by zero; a schedule beyond 2^24 compute
// actions is refused before it is built (1e9 microbatches took 12 GB).
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=1f1b virtual-stages=0" 2>&1 | FileCheck %s --check-prefix=VIRTUAL
// VIRTUAL: error: pmlir-pipeline-schedule: virtual-stages must be at least 1, not 0
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=1f1b ranks=-1" 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: error: pmlir-pipeline-schedule: ranks must be 0 (the stages over virtual-stages) or more, not -1
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=1f1b microbatches=0" 2>&1 | FileCheck %s --check-prefix=MICRO
// MICRO: error: pmlir-pipeline-schedule: microbatches must be at least 1, not 0
// RUN: not pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=1f1b microbatches=1000000000" 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: error: pmlir-pipeline-schedule: a pipeline schedule of 2 ranks x 1 virtual stages x 1000000000 microbatches runs more than the 16777216 compute actions a schedule may hold (2 a stage and microbatch)
// RUN: pmlir-opt %t/stages.mlir --pmlir-pipeline-schedule="schedule=gpipe" \
// RUN:   | not pmlir-opt --pmlir-pipeline-schedule="schedule=gpipe" 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: pmlir-pipeline-schedule: the module already has a pipe.schedule
// RUN: not pmlir-opt %s --pmlir-pipeline-schedule="schedule=gpipe" 2>&1 | FileCheck %s --check-prefix=UNCUT
// UNCUT: error: pmlir-pipeline-schedule: no function is cut into pipeline stages (pipe.stages): run pmlir-pipeline-partition first
