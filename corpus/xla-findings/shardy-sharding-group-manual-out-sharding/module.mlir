module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "model"=2]>
  func.func public @main(%arg0: tensor<2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}]>}) -> tensor<2xf32> {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{?}]>] out_shardings=[<@mesh, [{?}]>] manual_axes={"model"} (%a: tensor<2xf32>) {
      sdy.return %a : tensor<2xf32>
    } : (tensor<2xf32>) -> tensor<2xf32>
    sdy.sharding_group %0 group_id=0 : tensor<2xf32>
    sdy.sharding_group %arg0 group_id=0 : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
