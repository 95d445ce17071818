module @transfer_sharding_conflict {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>) {
    %s0 = mpmd.named_computation<"s0"> (%arg0) (%s0_a0: tensor<8x8xf32>) {
      %s0_v0 = stablehlo.transpose %s0_a0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
      mpmd.return %s0_v0 : tensor<8x8xf32>
    } : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %s1 = mpmd.named_computation<"s1"> (%s0, %arg0) (%s1_a0: tensor<8x8xf32>, %s1_a1: tensor<8x8xf32>) {
      %s1_v0 = stablehlo.multiply %s1_a0, %s1_a1 : tensor<8x8xf32>
      mpmd.return %s1_v0 : tensor<8x8xf32>
    } : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %s2 = mpmd.named_computation<"s2"> (%s1) (%s2_a0: tensor<8x8xf32>) {
      %s2_v0 = sdy.sharding_constraint %s2_a0 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>
      %s2_v1 = stablehlo.negate %s2_v0 : tensor<8x8xf32>
      mpmd.return %s2_v1 : tensor<8x8xf32>
    } : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %s2 : tensor<8x8xf32>
  }
}
