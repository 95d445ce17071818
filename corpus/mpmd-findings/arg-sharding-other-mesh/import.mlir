module @arg_sharding_other_mesh {
  sdy.mesh @m1 = <["x"=4]>
  sdy.mesh @m2 = <["x"=2]>
  func.func public @main(%arg0: !mpmd.mesh_tensor<"m1", tensor<8x8xf32>>, %arg1: !mpmd.mesh_tensor<"m1", tensor<8x8xf32>> {sdy.sharding = #sdy.sharding<@m2, [{}, {"x"}]>}) -> !mpmd.mesh_tensor<"m1", tensor<8x8xf32>> attributes {topology = #mpmd.topology<<"m1" : <["x"=4]>>, <"m2" : <["x"=2]>>>} {
    %0 = mpmd.fragment<mesh="m1", origin=["s0"]> (%arg1, %arg0) (%arg2: tensor<8x8xf32>, %arg3: tensor<8x8xf32>) {
      %1 = stablehlo.dot_general %arg3, %arg2, contracting_dims = [1] x [1] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      mpmd.return %1 : tensor<8x8xf32>
    } : (!mpmd.mesh_tensor<"m1", tensor<8x8xf32>>, !mpmd.mesh_tensor<"m1", tensor<8x8xf32>>) -> !mpmd.mesh_tensor<"m1", tensor<8x8xf32>>
    return %0 : !mpmd.mesh_tensor<"m1", tensor<8x8xf32>>
  }
}
