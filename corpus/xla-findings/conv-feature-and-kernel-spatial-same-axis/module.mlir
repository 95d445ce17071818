module @jit_f attributes {mhlo.num_partitions = 6 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=3, "y"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 3 : i64}, {name = "y", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<1x3x5x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}, {}, {}]>}, %arg1: tensor<2x3x3x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"x"}, {}]>}) -> (tensor<1x2x3x4xf32> {jax.result_info = "result[0]"}) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x3x5x6xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x3x4xf32>
    return %0 : tensor<1x2x3x4xf32>
  }
}
