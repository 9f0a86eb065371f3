// Training-step updates (results with tfm.updates) for
// pmlir-auto-sharding.mlir's memory check: on one device, 256 KiB a tensor.
module attributes {tfm.mesh = #tfm.mesh<dp = 1>} {
  // The update is made as its argument is last read: it is written into
  // the argument's buffer, and the peak is %w and %g alone (512 KiB).
  func.func @in_place(%w: tensor<256x256xf32>, %g: tensor<256x256xf32>)
      -> (tensor<256x256xf32> {tfm.updates = 0 : i64}) {
    %n = tfm.add %w, %g : tensor<256x256xf32>, tensor<256x256xf32>
    return %n : tensor<256x256xf32>
  }
  // %w is read after its update is made: the update needs its own buffer,
  // and the peak is %w, %g, %n and %m (1 MiB).
  func.func @read_after(%w: tensor<256x256xf32>, %g: tensor<256x256xf32>)
      -> (tensor<256x256xf32> {tfm.updates = 0 : i64}, tensor<256x256xf32>) {
    %n = tfm.add %w, %g : tensor<256x256xf32>, tensor<256x256xf32>
    %m = tfm.mul %w, %n : tensor<256x256xf32>, tensor<256x256xf32>
    return %n, %m : tensor<256x256xf32>, tensor<256x256xf32>
  }
}
