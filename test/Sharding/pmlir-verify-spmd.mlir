// pmlir-verify-spmd proves that the ranks' programs communicate alike, and
// names the two ranks, both ops and what differs where they do not. Every
// program the compile pipeline shards passes it on the way (it runs at the
// end of the sharded phase), so the suite's sharded runs are its positive
// cases; a few are here too.

// RUN: pmlir-opt %s -split-input-file -verify-diagnostics --pmlir-verify-spmd

// A ring on cp = 4 whose blocks from later ranks are skipped (scf.if on the
// rank): every rank sends and receives the same, and computes 1 to 4 blocks.
module attributes {tfm.mesh = #tfm.mesh<cp = 4>} {
  shard.grid @mesh(shape = 4)
  func.func @ring(%x: tensor<8xf32>) -> tensor<8xf32> {
    %i = shard.process_multi_index on @mesh axes = [0] : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %n = arith.addi %i, %c1 : index
    %next = arith.remui %n, %c4 : index
    %p = arith.addi %i, %c3 : index
    %previous = arith.remui %p, %c4 : index
    %r = scf.for %step = %c1 to %c4 step %c1 iter_args(%block = %x) -> tensor<8xf32> {
      %s = shard.send %block on @mesh grid_axes = [0] destination = [%next] : (tensor<8xf32>, index) -> tensor<8xf32>
      %got = shard.recv %s on @mesh grid_axes = [0] source = [%previous] : (tensor<8xf32>, index) -> tensor<8xf32>
      %earlier = arith.cmpi ule, %step, %i : index
      %sum = scf.if %earlier -> tensor<8xf32> {
        %m = shard.all_reduce %got on @mesh grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<8xf32>
        scf.yield %m : tensor<8xf32>
      } else {
        %m = shard.all_reduce %block on @mesh grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<8xf32>
        scf.yield %m : tensor<8xf32>
      }
      scf.yield %sum : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// Two all-gathers swapped on one rank: MPI would match the first of each
// rank and hand each the other's data.
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  shard.grid @mesh(shape = 2x2)
  func.func @swapped(%a: tensor<4xf32>, %b: tensor<6xf32>) -> (tensor<8xf32>, tensor<12xf32>) {
    %t = shard.process_multi_index on @mesh axes = [1] : index
    %d = shard.process_multi_index on @mesh axes = [0] : index
    %c1 = arith.constant 1 : index
    %odd = arith.cmpi eq, %t, %c1 : index
    %last = arith.cmpi eq, %d, %c1 : index
    %swap = arith.andi %odd, %last : i1
    %r:2 = scf.if %swap -> (tensor<8xf32>, tensor<12xf32>) {
      // expected-note @+1 {{the collective of rank 3 (dp=1, tp=1)}}
      %y = shard.all_gather %b on @mesh grid_axes = [1] gather_axis = 0 : tensor<6xf32> -> tensor<12xf32>
      %x = shard.all_gather %a on @mesh grid_axes = [1] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
      scf.yield %x, %y : tensor<8xf32>, tensor<12xf32>
    } else {
      // expected-error @+1 {{pmlir-verify-spmd: rank 2 (dp=1, tp=0) and rank 3 (dp=1, tp=1) disagree in their 1st collective over tp: rank 2 (dp=1, tp=0) issues all_gather (gather axis 0) of 4 f32 over tp, rank 3 (dp=1, tp=1) all_gather (gather axis 0) of 6 f32 over tp (they differ in the count)}}
      %x = shard.all_gather %a on @mesh grid_axes = [1] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
      %y = shard.all_gather %b on @mesh grid_axes = [1] gather_axis = 0 : tensor<6xf32> -> tensor<12xf32>
      scf.yield %x, %y : tensor<8xf32>, tensor<12xf32>
    }
    return %r#0, %r#1 : tensor<8xf32>, tensor<12xf32>
  }
}

// -----

// One rank reduces by max where the others sum.
module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  shard.grid @mesh(shape = 4)
  func.func @reduction(%a: tensor<3x5xf32>) -> tensor<3x5xf32> {
    %t = shard.process_linear_index on @mesh : index
    %c2 = arith.constant 2 : index
    %two = arith.cmpi eq, %t, %c2 : index
    %r = scf.if %two -> tensor<3x5xf32> {
      // expected-note @+1 {{the collective of rank 2 (tp=2)}}
      %m = shard.all_reduce %a on @mesh grid_axes = [0] reduction = max : tensor<3x5xf32> -> tensor<3x5xf32>
      scf.yield %m : tensor<3x5xf32>
    } else {
      // expected-error @+1 {{rank 0 (tp=0) and rank 2 (tp=2) disagree in their 1st collective over tp: rank 0 (tp=0) issues all_reduce (sum) of 15 f32 over tp, rank 2 (tp=2) all_reduce (max) of 15 f32 over tp (they differ in the reduction)}}
      %s = shard.all_reduce %a on @mesh grid_axes = [0] : tensor<3x5xf32> -> tensor<3x5xf32>
      scf.yield %s : tensor<3x5xf32>
    }
    return %r : tensor<3x5xf32>
  }
}

// -----

// A receive whose send is missing on its source.
module attributes {tfm.mesh = #tfm.mesh<pp = 2>} {
  shard.grid @mesh(shape = 2)
  func.func @missing_send(%a: tensor<4xf32>) -> tensor<4xf32> {
    %p = shard.process_multi_index on @mesh axes = [0] : index
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %p, %c0 : index
    %r = scf.if %first -> tensor<4xf32> {
      scf.yield %a : tensor<4xf32>
    } else {
      // expected-error @+1 {{rank 1 (pp=1) waits for ever to receive 4 f32 (tag 3) over pp from rank 0 (pp=0), which has ended its program and sends no more such messages}}
      %got = shard.recv %a on @mesh grid_axes = [0] source = [0] {pipe.tag = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
      scf.yield %got : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}

// -----

// A message sent under one tag and awaited under another: the receiver
// waits for ever, here while its sender waits in a collective.
module attributes {tfm.mesh = #tfm.mesh<pp = 2>} {
  shard.grid @mesh(shape = 2)
  func.func @tags(%a: tensor<4xf32>) -> tensor<4xf32> {
    %p = shard.process_multi_index on @mesh axes = [0] : index
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %p, %c0 : index
    %r = scf.if %first -> tensor<4xf32> {
      %s = shard.send %a on @mesh grid_axes = [0] destination = [1] {pipe.tag = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
      // expected-note @+1 {{where rank 0 (pp=0) waits}}
      %sum = shard.all_reduce %s on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
      scf.yield %sum : tensor<4xf32>
    } else {
      // expected-error @+1 {{rank 1 (pp=1) waits for ever to receive 4 f32 (tag 2) over pp from rank 0 (pp=0), which waits in all_reduce (sum) of 4 f32 over pp and sends no more such messages}}
      %got = shard.recv %a on @mesh grid_axes = [0] source = [0] {pipe.tag = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
      %sum = shard.all_reduce %got on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
      scf.yield %sum : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}

// -----

// A message received with another count than it was sent with.
module attributes {tfm.mesh = #tfm.mesh<pp = 2>} {
  shard.grid @mesh(shape = 2)
  func.func @message_count(%a: tensor<4xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
    %p = shard.process_multi_index on @mesh axes = [0] : index
    %c0 = arith.constant 0 : index
    %first = arith.cmpi eq, %p, %c0 : index
    %r = scf.if %first -> tensor<2xf32> {
      // expected-error @+1 {{rank 0 (pp=0) sends 4 f32 (tag 0) over pp to rank 1 (pp=1), which receives it as 2 f32 (they differ in the count)}}
      %s = shard.send %a on @mesh grid_axes = [0] destination = [1] : (tensor<4xf32>) -> tensor<4xf32>
      scf.yield %b : tensor<2xf32>
    } else {
      // expected-note @+1 {{the receive of rank 1 (pp=1)}}
      %got = shard.recv %b on @mesh grid_axes = [0] source = [0] : (tensor<2xf32>) -> tensor<2xf32>
      scf.yield %got : tensor<2xf32>
    }
    return %r : tensor<2xf32>
  }
}

// -----

// A message no one receives.
module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {
  shard.grid @mesh(shape = 2)
  func.func @unreceived(%a: tensor<4xf32>) -> tensor<4xf32> {
    %i = shard.process_multi_index on @mesh axes = [0] : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %n = arith.addi %i, %c1 : index
    %next = arith.remui %n, %c2 : index
    // expected-error @+1 {{rank 0 (cp=0) sends 4 f32 (tag 0) over cp to rank 1 (cp=1), which never receives it}}
    %s = shard.send %a on @mesh grid_axes = [0] destination = [%next] : (tensor<4xf32>, index) -> tensor<4xf32>
    return %s : tensor<4xf32>
  }
}

// -----

// Groups entered in a cycle: where dp = tp, dp first, elsewhere tp first.
// Each group's own sequence agrees; together they wait for ever (rank 0
// for 2 over dp, 2 for 3 over tp, 3 for 1 over dp, 1 for 0 over tp).
module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {
  shard.grid @mesh(shape = 2x2)
  func.func @crossed(%a: tensor<4xf32>) -> tensor<4xf32> {
    %i:2 = shard.process_multi_index on @mesh axes = [0, 1] : index, index
    %diagonal = arith.cmpi eq, %i#0, %i#1 : index
    %r = scf.if %diagonal -> tensor<4xf32> {
      // expected-error @+1 {{rank 0 (dp=0, tp=0) waits for ever in its 1st collective over dp, all_reduce (sum) of 4 f32 over dp: rank 2 (dp=1, tp=0), of its group, waits in all_reduce (sum) of 4 f32 over tp}}
      %x = shard.all_reduce %a on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
      %y = shard.all_reduce %x on @mesh grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
      scf.yield %y : tensor<4xf32>
    } else {
      // expected-note @+1 {{where rank 2 (dp=1, tp=0) waits}}
      %x = shard.all_reduce %a on @mesh grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
      %y = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
      scf.yield %y : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}

// -----

// A condition on data may guard collectives only where both branches
// issue the same ones.
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  shard.grid @mesh(shape = 2)
  func.func @same_branches(%a: tensor<4xf32>, %flag: i1) -> tensor<4xf32> {
    %r = scf.if %flag -> tensor<4xf32> {
      %x = shard.all_reduce %a on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
      scf.yield %x : tensor<4xf32>
    } else {
      %x = shard.all_reduce %a on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
      %y = arith.addf %x, %x : tensor<4xf32>
      scf.yield %y : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
  func.func @other_branches(%a: tensor<4xf32>, %flag: i1) -> tensor<4xf32> {
    // expected-error @+1 {{on rank 0 (tp=0) this scf.if's condition is not a function of the rank, and its branches communicate differently: the then branch issues 1 or more calls, the other 0}}
    %r = scf.if %flag -> tensor<4xf32> {
      %x = shard.all_reduce %a on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
      scf.yield %x : tensor<4xf32>
    } else {
      scf.yield %a : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}

// -----

// A loop whose trip count the rank does not decide.
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  shard.grid @mesh(shape = 2)
  func.func @unknown_loop(%a: tensor<4xf32>, %n: index) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{this scf.for communicates, and its bounds are not known from the rank (on rank 0 (tp=0))}}
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %a) -> tensor<4xf32> {
      %y = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
      scf.yield %y : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}

// -----

// A broadcast whose root differs between ranks, in a function called
// from the entry, on a grid of sub-axes.
module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
  shard.grid @mesh(shape = 2x2) {tfm.grid_axes = ["tp:(1)2", "tp:(2)2"]}
  func.func private @spread(%a: tensor<4xf32>, %root: index) -> tensor<4xf32> {
    // expected-error @+2 {{rank 0 (tp=0) and rank 1 (tp=1) disagree in their 1st collective over tp:(2)2: rank 0 (tp=0) issues broadcast (root rank 0) of 4 f32 over tp:(2)2, rank 1 (tp=1) broadcast (root rank 1) of 4 f32 over tp:(2)2 (they differ in the root)}}
    // expected-note @+1 {{the collective of rank 1 (tp=1)}}
    %b = shard.broadcast %a on @mesh grid_axes = [1] root = [%root] : (tensor<4xf32>, index) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
  func.func @caller(%a: tensor<4xf32>) -> tensor<4xf32> {
    %m = shard.process_multi_index on @mesh axes = [1] : index
    %b = func.call @spread(%a, %m) : (tensor<4xf32>, index) -> tensor<4xf32>
    return %b : tensor<4xf32>
  }
}

// -----

// A mesh beyond what the check traces is said to be unchecked.
// expected-warning @+1 {{pmlir-verify-spmd: the mesh has 131072 ranks, more than the 65536 the check traces: the ranks' collectives are not proven to match}}
module attributes {tfm.mesh = #tfm.mesh<dp = 256, tp = 512>} {
  shard.grid @mesh(shape = 256x512)
  func.func @huge(%a: tensor<4xf32>) -> tensor<4xf32> {
    %x = shard.all_reduce %a on @mesh grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
    return %x : tensor<4xf32>
  }
}

// -----

// A peer the rank cannot compute because an op gives no value: the cause
// is named (it was "not a function of the rank").
module attributes {tfm.mesh = #tfm.mesh<cp = 2>} {
  shard.grid @mesh(shape = 2)
  func.func @divided(%x: tensor<8xf32>) -> tensor<8xf32> {
    %i = shard.process_multi_index on @mesh axes = [0] : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-note @+1 {{'arith.remui' gives no value on its operands here (a division by zero?)}}
    %q = arith.remui %i, %c0 : index
    %next = arith.addi %q, %c1 : index
    // expected-error @+1 {{pmlir-verify-spmd: the destination is undefined on rank 0 (cp=0): an op it is computed from gives no value}}
    %s = shard.send %x on @mesh grid_axes = [0] destination = [%next] : (tensor<8xf32>, index) -> tensor<8xf32>
    return %s : tensor<8xf32>
  }
}

// -----

// A grid without the module's tfm.mesh: the check names its axes itself
// (this crashed the pass).
shard.grid @mesh(shape = 2)

// -----

// Every rank's calls are held at once: 65536 ranks (the most the check
// traces) of 130 calls each are more than 2^23 together, and the check
// stops there with a warning instead of growing without bound (10000
// iterations once took 18 GB).
module attributes {tfm.mesh = #tfm.mesh<cp = 65536>} {
  shard.grid @mesh(shape = 65536)
  // expected-warning @+1 {{pmlir-verify-spmd: the ranks issue more than 8388608 communication calls together (64528 of 65536 ranks traced): the ranks' collectives are not proven to match}}
  func.func @many(%a: tensor<4xf32>) -> tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 130 : index
    %r = scf.for %k = %c0 to %n step %c1 iter_args(%b = %a) -> tensor<4xf32> {
      %m = shard.all_reduce %b on @mesh grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
      scf.yield %m : tensor<4xf32>
    }
    return %r : tensor<4xf32>
  }
}
