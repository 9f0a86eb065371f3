// RUN: pmlir-opt %s -split-input-file -verify-diagnostics

func.func @unknown_kind(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{unknown kind "X" (known: F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B)}}
  %f = pipe.fragment stage 0 "X" : tensor<2xf32> {
    pipe.yield %x : tensor<2xf32>
  }
  return %f : tensor<2xf32>
}

// -----

func.func @transfer_kind(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{has kind "SEND_F"; a fragment is F (forward), B (backward), I (input gradient) or W (weight gradient)}}
  %f = pipe.fragment stage 0 "SEND_F" : tensor<2xf32> {
    pipe.yield %x : tensor<2xf32>
  }
  return %f : tensor<2xf32>
}

// -----

// expected-error @+1 {{unknown kind "1F1B" (known: none, gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, csv)}}
pipe.schedule "1F1B" ranks 1 stages 1 microbatches 1 [["0F0", "0B0"]]

// -----

func.func @to_itself(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{moves a value from stage 1 to itself}}
  %t = pipe.transfer %x from 1 to 1 : tensor<2xf32>
  return %t : tensor<2xf32>
}

// -----

func.func @stages_and_inputs(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{has 1 inputs but 2 stages}}
  %s = pipe.stage_sum %x stages [0, 1] : tensor<2xf32> -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

// expected-error @+1 {{no rank runs 0B1 (stage 0's B of microbatch 1)}}
pipe.schedule "csv" ranks 2 stages 2 microbatches 2
    [["0F0", "0F1", "0B0"], ["1F0", "1B0", "1F1", "1B1"]]

// -----

// expected-error @+1 {{the schedule deadlocks: rank 0 waits at 0RECV_B0 for 1SEND_B0 (on rank 1); rank 1 waits at 1RECV_F1 for 0SEND_F1 (on rank 0)}}
pipe.schedule "csv" ranks 2 stages 2 microbatches 2
    [["0F0", "0B0", "0F1", "0B1"], ["1F1", "1B1", "1F0", "1B0"]]

// -----

// A stage lives on the first rank that runs it.
// expected-error @+1 {{rank 1 runs 1B0, but stage 1 lives on rank 0}}
pipe.schedule "csv" ranks 2 stages 2 microbatches 1 [["0F0", "1F0", "0B0"], ["1B0"]]

// -----

// expected-error @+1 {{rank 1's action "1Z0" is no <stage><F|B|I|W|SEND_F|RECV_F|SEND_B|RECV_B><microbatch>}}
pipe.schedule "csv" ranks 2 stages 2 microbatches 1 [["0F0", "0B0"], ["1F0", "1Z0"]]

// -----

// The generic form holds each action as a #pipe.action, which refuses a
// negative stage or microbatch wherever it is written.
// expected-error @+1 {{a pipeline action's stage and microbatch count from 0, got stage 0 and microbatch -1}}
"pipe.schedule"() <{actions = [[#pipe.action<0, F, -1>, #pipe.action<0, B, 0>]], kind = #pipe<schedule_kind csv>, microbatches = 1 : i64, ranks = 1 : i64, stages = 1 : i64}> : () -> ()

// -----

// expected-error @+1 {{a pipeline action's stage and microbatch count from 0, got stage -2 and microbatch 0}}
func.func private @f() attributes {pipe.last = #pipe.action<-2, W, 0>}

// -----

// A schedule's actions bound its stages and microbatches (each stage runs
// each microbatch's forward), checked before anything is sized by them.
// expected-error @+1 {{lists 1 actions, fewer than the forwards of its 9223372036854775807 stages times 1 microbatches}}
pipe.schedule "csv" ranks 1 stages 9223372036854775807 microbatches 1 [["0F0"]]

// -----

// expected-error @+1 {{lists 2 actions, fewer than the forwards of its 2 stages times 2 microbatches}}
pipe.schedule "csv" ranks 1 stages 2 microbatches 2 [["0F0", "1F0"]]

// -----

// A program cut into 2 stages has no stage 5.
func.func @transfer_past_stages(%x: tensor<2xf32>) -> tensor<2xf32> attributes {pipe.stages = 2 : i64} {
  // expected-error @+1 {{names stage 5 of a program of 2 stages (pipe.stages)}}
  %t = pipe.transfer %x from 0 to 5 : tensor<2xf32>
  return %t : tensor<2xf32>
}

// -----

func.func @stage_sum_past_stages(%x: tensor<2xf32>) -> tensor<2xf32> attributes {pipe.stages = 2 : i64} {
  // expected-error @+1 {{names stage 2 of a program of 2 stages (pipe.stages)}}
  %s = pipe.stage_sum %x, %x stages [0, 2] : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

func.func @fragment_past_stages(%x: tensor<2xf32>) -> tensor<2xf32> attributes {pipe.stages = 2 : i64} {
  // expected-error @+1 {{names stage 3 of a program of 2 stages (pipe.stages)}}
  %f = pipe.fragment stage 3 "F" : tensor<2xf32> {
    pipe.yield %x : tensor<2xf32>
  }
  return %f : tensor<2xf32>
}

// -----

// expected-error @+1 {{stands outside a function's body or inside another fragment}}
%f = pipe.fragment stage 0 "F" : tensor<2xf32> {
  %c = arith.constant dense<1.0> : tensor<2xf32>
  pipe.yield %c : tensor<2xf32>
}

// -----

func.func @nested(%x: tensor<2xf32>) -> tensor<2xf32> {
  %f = pipe.fragment stage 0 "F" : tensor<2xf32> {
    // expected-error @+1 {{stands outside a function's body or inside another fragment}}
    %g = pipe.fragment stage 0 "F" : tensor<2xf32> {
      pipe.yield %x : tensor<2xf32>
    }
    pipe.yield %g : tensor<2xf32>
  }
  return %f : tensor<2xf32>
}
