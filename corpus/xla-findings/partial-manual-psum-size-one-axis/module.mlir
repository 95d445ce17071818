module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=4, "y"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}, {name = "y", size = 1 : i64}]}}
  sdy.mesh @mesh_0 = <["x"=4, "y"=1]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}, {name = "y", size = 1 : i64}]}}
  func.func public @main(%arg0: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x2xf32> {jax.result_info = "result[0]"}) {
    %0 = "stablehlo.all_reduce"(%arg0) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>, use_global_device_ids}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32>
      %3 = sdy.sharding_constraint %2 <@mesh, []> : tensor<f32>
      stablehlo.return %3 : tensor<f32>
    }) : (tensor<4x2xf32>) -> tensor<4x2xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{?}, {?}]> : tensor<4x2xf32>
    return %1 : tensor<4x2xf32>
  }
}
