// pmlir-auto-sharding on an MLP over tp = 2 on the h100 topology. With
// the weights fitting whole, fc1 stays whole (its block is cheaper computed
// twice than its weight moved); under a budget that holds the weights only
// split, the plan is Megatron's: fc1 column-parallel, fc2 row-parallel, and
// the pending output reduce-scattered into row blocks (column blocks cost
// the same).
// The exhaustive search finds a plan of the same cost, CBC the same plan on
// every run, and a budget no plan fits says the least one needs.

// RUN: pmlir-opt %s --pmlir-auto-sharding="topology=h100 memory-budget=20MiB report=%t.json" | FileCheck %s
// RUN: FileCheck %s --input-file=%t.json --check-prefix=REPORT
// RUN: pmlir-opt %s --pmlir-auto-sharding="topology=h100 memory-budget=20MiB solver=exhaustive report=%t-exhaustive.json" -o /dev/null
// RUN: FileCheck %s --input-file=%t-exhaustive.json --check-prefix=REPORT
// RUN: pmlir-opt %s --pmlir-auto-sharding="topology=h100 memory-budget=20MiB" -o %t.1.mlir
// RUN: pmlir-opt %s --pmlir-auto-sharding="topology=h100 memory-budget=20MiB" -o %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// RUN: pmlir-opt %s --pmlir-auto-sharding="topology=h100" | FileCheck %s --check-prefix=ROOMY
// RUN: pmlir-opt %s --pmlir-auto-sharding="topology=h100 memory-budget=20MiB" --pmlir-sharding-propagation --pmlir-partition | FileCheck %s --check-prefix=PARTITION

// The plan's seeds: priority 1 on arguments, so that constraints
// (priority 0) would decide the values between them.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: tensor<8x1024xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], []], priority = 1>}
// CHECK-SAME: tensor<1024x4096xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]], priority = 1>}
// CHECK-SAME: tensor<4096x1024xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []], priority = 1>}
// CHECK-SAME: -> (tensor<8x1024xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}"tp"], []]>})
// CHECK-NOT: tfm.sharding_constraint

// One reduce_scatter of the [8, 1024] f32 output: 32 KiB, half of it sent.
// By hand on the h100 preset (600 TFLOP/s, 3 TB/s, tp on NVLink at
// 360 GB/s and 3 us): the reduce_scatter is 1 step, 3 us + 16384 B / 360
// GB/s = 3.0455 us; each matmul is memory-bound, (32 KiB + 8 MiB + 64
// KiB) / 3 TB/s = 2.8290 us (its input, half its weight, its half
// output; fc2's output is the whole [8, 1024] pending sum); the gelu
// moves 2 x 64 KiB, 0.0437 us: 8.7471 us in all. Peak memory, at the gelu:
// the two half weights (16 MiB), the input (32 KiB) and both hidden halves
// (2 x 64 KiB) = 16941056 bytes.
// REPORT: "comm": {
// REPORT-NEXT: "tp": {
// REPORT-NEXT: "bytes": 32768,
// REPORT-NEXT: "collectives": 1,
// REPORT: "wire_bytes_per_rank": 16384
// REPORT: "objective_seconds": 8.74714311111{{[0-9]*}}e-06,
// REPORT: "peak_memory_bytes": 16941056,
// REPORT: "optimal": true,

// ROOMY-LABEL: func.func @mlp
// ROOMY-SAME: tensor<1024x4096xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], []], priority = 1>}

// PARTITION-LABEL: func.func @mlp
// PARTITION: tfm.matmul {{.*}} : tensor<8x1024xf32>, tensor<1024x2048xf32> -> tensor<8x2048xf32>
// PARTITION: tfm.matmul {{.*}} : tensor<8x2048xf32>, tensor<2048x1024xf32> -> tensor<8x1024xf32>
// PARTITION: shard.reduce_scatter
// PARTITION-NOT: shard.all_reduce
// PARTITION-NOT: shard.all_gather

// Over a tp link so slow that any collective costs more than the whole
// MLP computed on each device, the plan sends nothing: fc1 and the gelu,
// which follows fc1 (s_follow), keeps fc1's sharding rather than take a
// free slice of it that fc2 would have to gather again (three
// collectives over that link).
// RUN: echo '{"name": "slow-tp", "devices_per_node": 8, "device": {"tflops": 100, "memory_gb": 80, "memory_gbps": 1000}, "intra_node": {"gbps": 100, "latency_us": 1}, "inter_node": {"gbps": 100, "latency_us": 1}, "axes": {"tp": {"gbps": 0.001, "latency_us": 1000000}}}' > %t.slow-tp.json
// RUN: pmlir-opt %s --pmlir-auto-sharding="topology=%t.slow-tp.json report=%t.slow.json" | FileCheck %s --check-prefix=SLOW
// RUN: FileCheck %s --input-file=%t.slow.json --check-prefix=SLOW-REPORT
// SLOW-LABEL: func.func @mlp
// SLOW-SAME: tensor<8x1024xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], []], priority = 1>}
// SLOW-SAME: tensor<1024x4096xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], []], priority = 1>}
// fc2 may still split its columns: its output goes out in column blocks
// without a collective.
// SLOW-REPORT: "comm": {},
// SLOW-REPORT: "comm_seconds": 0,

// RUN: not pmlir-opt %s --pmlir-auto-sharding="topology=h100 memory-budget=8MiB" -o %t.none.mlir 2>&1 | FileCheck %s --check-prefix=TIGHT
// RUN: not ls %t.none.mlir
// TIGHT: error: auto-sharding: cannot fit under 8.00 MiB: the least memory any plan needs is 16.14 MiB
// RUN: not pmlir-opt %s --pmlir-auto-sharding="memory-budget=lots" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BUDGET
// BUDGET: error: auto-sharding: memory budget 'lots' is not a positive byte count up to 4 EiB (as 12GiB, 800MB or 1e9)
// RUN: not pmlir-opt %s --pmlir-auto-sharding="solver=simplex" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SOLVER
// SOLVER: for the --solver option: Cannot find option named 'simplex'!
// RUN: not pmlir-opt %s --pmlir-auto-sharding="topology=tpu" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOPOLOGY
// TOPOLOGY: error: auto-sharding: topology 'tpu' is neither a preset (cpu, h100, h200) nor a readable JSON file
// A link pinned to an axis the mesh does not have (misspelt) is refused.
// RUN: echo '{"devices_per_node": 8, "device": {"tflops": 100, "memory_gb": 80, "memory_gbps": 2000}, "intra_node": {"gbps": 300, "latency_us": 3}, "inter_node": {"gbps": 40, "latency_us": 10}, "axes": {"tpp": {"gbps": 1, "latency_us": 1}}}' > %t.axis.json
// RUN: not pmlir-opt %s --pmlir-auto-sharding="topology=%t.axis.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TOPOLOGY-AXIS
// TOPOLOGY-AXIS: error: auto-sharding: topology '{{.*}}axis.json': the topology pins a link to axis 'tpp', which is no axis a mesh here has ('tp', 'cp', 'ep', 'dp', 'pp')
// A link pinned to an axis of pmlir's the mesh lacks (as a plan's of size 1)
// is left unused.
// RUN: echo '{"devices_per_node": 8, "device": {"tflops": 100, "memory_gb": 80, "memory_gbps": 2000}, "intra_node": {"gbps": 300, "latency_us": 3}, "inter_node": {"gbps": 40, "latency_us": 10}, "axes": {"dp": {"gbps": 1, "latency_us": 1}}}' > %t.dp.json
// RUN: pmlir-opt %s --pmlir-auto-sharding="topology=%t.dp.json" -o /dev/null
// RUN: not pmlir-opt %s --pmlir-auto-sharding="time-limit=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LIMIT
// LIMIT: error: auto-sharding: time limit 0.00 must be a positive finite number of seconds
// A pipeline axis other than pp names an axis of the mesh (a misspelt one was ignored).
// RUN: not pmlir-opt %s --pmlir-auto-sharding="pipeline-axis=zz" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE-AXIS
// PIPELINE-AXIS: error: auto-sharding: pipeline-axis 'zz' is no axis of the mesh #tfm.mesh<
// RUN: sed 's/tp = 2/tp = 2, sp = 2/' %s | not pmlir-opt --pmlir-auto-sharding -o /dev/null 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: error: auto-sharding places mesh #tfm.mesh<tp = 2, sp = 2> on the topology: mesh axis 'sp' has no default place in the rank order (tp, cp, ep, dp, pp); give one with --rank-order
// RUN: sed 's/tp = 2/tp = 2, sp = 2/' %s | pmlir-opt --pmlir-auto-sharding="rank-order=tp,sp" -o /dev/null
// The mesh's own rank order places it; the option replaces it.
// RUN: sed 's/tp = 2/tp = 2, sp = 2, rank_order = [tp, sp]/' %s | pmlir-opt --pmlir-auto-sharding -o /dev/null
// RUN: sed 's/tp = 2/tp = 2, sp = 2, rank_order = [tp, sp]/' %s | not pmlir-opt --pmlir-auto-sharding="rank-order=tp" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PARTORDER
// PARTORDER: error: auto-sharding: mesh rank_order must name every axis of the mesh

// Expert parallelism: eight experts (hidden 1024, FFN 2048) on ep=4, their
// tokens split by batch. The experts split over the tokens' axis (each
// device's tokens sent to the devices of their experts and back: 2
// all-to-alls of its 32 x 128 x 2 routed rows of 1024 f32, 2 MiB each)
// beat experts kept whole (every device reads all 192 MiB of weights) and
// each expert's FFN split (the tokens gathered, the result reduced).
// RUN: pmlir-opt %S/Inputs/auto-sharding-experts.mlir --pmlir-auto-sharding="topology=h100 report=%t.experts.json" | FileCheck %s --check-prefix=EXPERTS
// RUN: FileCheck %s --input-file=%t.experts.json --check-prefix=EXPERTS-REPORT
// RUN: pmlir-opt %S/Inputs/auto-sharding-experts.mlir --pmlir-auto-sharding="topology=h100" --pmlir-sharding-propagation --pmlir-partition | FileCheck %s --check-prefix=EXPERTS-PARTITION
// EXPERTS-LABEL: func.func @experts
// EXPERTS-SAME: %arg3: tensor<8x2048x1024xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}"ep"], [], []], priority = 1>}
// EXPERTS-REPORT: "comm": {
// EXPERTS-REPORT-NEXT: "ep": {
// EXPERTS-REPORT-NEXT: "bytes": 4194304,
// EXPERTS-REPORT-NEXT: "collectives": 2,
// EXPERTS-PARTITION: tfm.moe_all_to_all {{.*}} : tensor<512x1024xf32>, tensor<8xi64> -> tensor<2048x1024xf32>, tensor<2xi64>
// EXPERTS-PARTITION: tfm.moe_all_to_all_back
// EXPERTS-PARTITION-NOT: shard.all_gather

// A training step's update made where its argument is last read takes no
// bytes of its own (bufferization writes it into the argument's buffer); one
// made before a later read of its argument does.
// RUN: pmlir-opt %S/Inputs/auto-sharding-in-place.mlir --pmlir-auto-sharding="report=%t.in-place.json" -o %t.in-place.mlir
// RUN: %python -c "import json; f = json.load(open('%t.in-place.json'))['functions']; print('in place', f['in_place']['peak_memory_bytes'], 'read after', f['read_after']['peak_memory_bytes'])" | FileCheck %s --check-prefix=IN-PLACE
// IN-PLACE: in place 524288 read after 1048576

// A function's name may hold any bytes; the report, JSON, holds UTF-8 text:
// what is not UTF-8 becomes U+FFFD.
// RUN: sed 's/@mlp/@"ml\\FFp"/' %s | pmlir-opt --pmlir-auto-sharding="topology=h100 memory-budget=20MiB report=-" -o %t.bytes.mlir | FileCheck %s --check-prefix=BYTES
// BYTES: "functions": {
// BYTES-NEXT: "ml�p": {

// A sharding the program carries is kept, and the plan is chosen around
// it: fc2's weight pinned column-parallel stays so (fc1 then gives it its
// input whole), and with keep-annotations=false the pin is ignored.
// RUN: sed 's/%w2: tensor<4096x1024xf32>)/%w2: tensor<4096x1024xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>})/' %s | pmlir-opt --pmlir-auto-sharding="topology=h100 memory-budget=20MiB" | FileCheck %s --check-prefix=KEPT
// RUN: sed 's/%w2: tensor<4096x1024xf32>)/%w2: tensor<4096x1024xf32> {tfm.sharding = #tfm.sharding<[[], ["tp"]]>})/' %s | pmlir-opt --pmlir-auto-sharding="topology=h100 memory-budget=20MiB keep-annotations=false" | FileCheck %s
// KEPT-LABEL: func.func @mlp
// KEPT-SAME: tensor<4096x1024xf32> {tfm.sharding = #tfm.sharding<{{\[\[}}], ["tp"]], priority = 1>}

// A model of 3 layers and one of 7 make problems of the same size: the
// training step, cut into a stage a layer and accumulating 2 microbatches,
// merges its layers, the stage cuts between them, each microbatch's
// embedding and loss, the optimizer's updates of every layer, the running
// sums over microbatches and the gradient norm's sum over parameters.
// RUN: pmlir-gen gpt2 --layers 3 --hidden 32 --heads 2 --vocab 64 --seq 8 --batch 2 --loss -o %t.l3.mlir
// RUN: pmlir-gen gpt2 --layers 7 --hidden 32 --heads 2 --vocab 64 --seq 8 --batch 2 --loss -o %t.l7.mlir
// RUN: pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" %t.l3.mlir | pmlir-opt --pmlir-autodiff="entry=forward name=forward_grad keep-entry=false" --pmlir-pipeline-partition="entry=forward_grad stages=3 split-points=1,2" --pmlir-optimizer="entry=forward_grad name=train_step keep-entry=false grad-accum=2" --pmlir-auto-sharding="report=%t.l3.json" -o /dev/null
// RUN: pmlir-opt --pmlir-attach-mesh="mesh=dp=2,tp=2" %t.l7.mlir | pmlir-opt --pmlir-autodiff="entry=forward name=forward_grad keep-entry=false" --pmlir-pipeline-partition="entry=forward_grad stages=7 split-points=1,2,3,4,5,6" --pmlir-optimizer="entry=forward_grad name=train_step keep-entry=false grad-accum=2" --pmlir-auto-sharding="report=%t.l7.json" -o /dev/null
// RUN: grep -E '"(variables|strategies|edges)"' %t.l3.json > %t.l3.size
// RUN: grep -E '"(variables|strategies|edges)"' %t.l7.json > %t.l7.size
// RUN: diff %t.l3.size %t.l7.size
// RUN: FileCheck %s --input-file=%t.l3.json --check-prefix=LAYERS3
// RUN: FileCheck %s --input-file=%t.l7.json --check-prefix=LAYERS7
// LAYERS3: "layers": 12,
// LAYERS7: "layers": 28,

module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @mlp(%x: tensor<8x1024xf32>, %w1: tensor<1024x4096xf32>, %w2: tensor<4096x1024xf32>) -> tensor<8x1024xf32> {
    %h = tfm.matmul %x, %w1 : tensor<8x1024xf32>, tensor<1024x4096xf32> -> tensor<8x4096xf32>
    %g = tfm.gelu %h tanh : tensor<8x4096xf32>
    %y = tfm.matmul %g, %w2 : tensor<8x4096xf32>, tensor<4096x1024xf32> -> tensor<8x1024xf32>
    return %y : tensor<8x1024xf32>
  }
}
