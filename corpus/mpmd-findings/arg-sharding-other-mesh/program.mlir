module @arg_sharding_other_mesh {
  sdy.mesh @m1 = <["x"=4]>
  sdy.mesh @m2 = <["x"=2]>
  func.func public @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m2, [{}, {"x"}]>}) -> (tensor<8x8xf32>) {
    %s0 = mpmd.named_computation<"s0"> (%arg1, %arg0) (%s0_a0: tensor<8x8xf32>, %s0_a1: tensor<8x8xf32>) {
      %s0_v0 = stablehlo.dot_general %s0_a1, %s0_a0, contracting_dims = [1] x [1] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      mpmd.return %s0_v0 : tensor<8x8xf32>
    } : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    return %s0 : tensor<8x8xf32>
  }
}
