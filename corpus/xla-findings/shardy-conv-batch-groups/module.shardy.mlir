module @conv_batch_groups attributes {mhlo.cross_program_prefetches = [], mhlo.input_output_alias = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  sdy.mesh @mesh = <["x0"=2, "x1"=2, "x2"=2]>
  func.func @main(%arg0: tensor<2x9x16xf32>, %arg1: tensor<2x9x16xf32>) -> (tensor<3x1x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x1", "x2"}, {}]>}) {
    %0 = mhlo.copy %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x0"}, {}, {"x1", "x2"}]>]>} : tensor<2x9x16xf32>
    %1 = mhlo.copy %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x0", "x1"}, {}, {"x2"}]>]>} : tensor<2x9x16xf32>
    %2 = stablehlo.convolution(%0, %1) dim_numbers = [f, 0, b]x[i, 0, o]->[0, b, f], window = {stride = [1], pad = [[1, 1]], lhs_dilate = [1], rhs_dilate = [1], reverse = [false]} {batch_group_count = 16 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"x1", "x2"}, {}]>]>} : (tensor<2x9x16xf32>, tensor<2x9x16xf32>) -> tensor<3x1x16xf32>
    return %2 : tensor<3x1x16xf32>
  }
}
