#sp = #ifrt.sharding_param<1x4 to [0] on 4>
#sp1 = #ifrt.sharding_param<1x1 to [0] on 4>
module @arg_sharding_other_mesh {
  sdy.mesh @m1 = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
  sdy.mesh @m2 = <["x"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
  func.func public @main(%arg0: !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, %arg1: !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<8x8xf32>, #sp1, [0, 1, 2, 3]> attributes {ifrt.function} {
    %outputs, %control_output = ifrt.Call @p0_s0.arg_sharding_other_mesh::@main(%arg1, %arg0) on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p0_s0.arg_sharding_other_mesh_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<8x8xf32>, #sp1, [0, 1, 2, 3]>
    return %outputs : !ifrt.array<tensor<8x8xf32>, #sp1, [0, 1, 2, 3]>
  }
  module @p0_s0.arg_sharding_other_mesh <sym_visibility = "private"> {
    sdy.mesh @m2 = <["x"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
    func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m2, [{}, {"x"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m2, [{}, {"x"}]>}) -> tensor<8x8xf32> attributes {reserved_hbm_bytes = 0 : i64} {
      %0 = stablehlo.dot_general %arg1, %arg0, contracting_dims = [1] x [1] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      return %0 : tensor<8x8xf32>
    }
  }
}
