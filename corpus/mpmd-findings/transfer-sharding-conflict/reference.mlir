module @transfer_sharding_conflict {
  func.func public @main(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>) {
    %s0_v0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %s1_v0 = stablehlo.multiply %s0_v0, %arg0 : tensor<8x8xf32>
    %s2_v0 = stablehlo.optimization_barrier %s1_v0 : tensor<8x8xf32>
    %s2_v1 = stablehlo.negate %s2_v0 : tensor<8x8xf32>
    return %s2_v1 : tensor<8x8xf32>
  }
}
