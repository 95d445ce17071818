module @arg_sharding_other_mesh {
  sdy.mesh @m1 = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
  sdy.mesh @m2 = <["x"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
  func.func public @main(%arg0: !mpmd.mesh_tensor<"m1", tensor<8x8xf32>, sharding=<@m2, [{}, {"x"}]>>, %arg1: !mpmd.mesh_tensor<"m1", tensor<8x8xf32>, sharding=<@m2, [{}, {"x"}]>>) -> !mpmd.mesh_tensor<"m1", tensor<8x8xf32>> attributes {topology = #mpmd.topology<<"m1" : <["x"=4]>>, <"m2" : <["x"=2]>>>} {
    %0 = mpmd.fragment_call<mesh="m1", origin=["s0"]> @p0_s0.arg_sharding_other_mesh(%arg1, %arg0) : (!mpmd.mesh_tensor<"m1", tensor<8x8xf32>, sharding=<@m2, [{}, {"x"}]>>, !mpmd.mesh_tensor<"m1", tensor<8x8xf32>, sharding=<@m2, [{}, {"x"}]>>) -> !mpmd.mesh_tensor<"m1", tensor<8x8xf32>>
    return %0 : !mpmd.mesh_tensor<"m1", tensor<8x8xf32>>
  }
  func.func @p0_s0.arg_sharding_other_mesh(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m2, [{}, {"x"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m2, [{}, {"x"}]>}) -> tensor<8x8xf32> attributes {mesh_shape = #sdy.mesh<["x"=4]>, reserved_hbm_bytes = 0 : i64} {
    %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [1] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
