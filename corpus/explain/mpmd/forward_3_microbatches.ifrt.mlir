#sp = #ifrt.sharding_param<1x1 to [0] on 4>
#sp1 = #ifrt.sharding_param<4x1 to [0] on 4>
#sp2 = #ifrt.sharding_param<1x4 to [0] on 4>
module @mpmd_60 {
  sdy.mesh @mesh = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
  func.func public @main(%arg0: !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, %arg1: !ifrt.array<tensor<8x8xf32>, #sp1, [4, 5, 6, 7]>, %arg2: !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, %arg3: !ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>, %arg4: !ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>, %arg5: !ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>) -> (!ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>) attributes {ifrt.function} {
    %outputs, %control_output = ifrt.Call @p0_s0_calls0to2.mpmd_60::@main(%arg3, %arg0) on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p0_s0_calls0to2.mpmd_60_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_0, %control_output_1 = ifrt.CopyArrays(%outputs) : (!ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<4x8xf32>, #sp2, [4, 5, 6, 7]>
    %outputs_2, %control_output_3 = ifrt.Call @p1_s1_calls0to2.mpmd_60::@main(%outputs_0, %arg1) on devices [4, 5, 6, 7] <donated_input_indices = [0]> {ifrt.compile_options_key = "p1_s1_calls0to2.mpmd_60_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<4x8xf32>, #sp2, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp1, [4, 5, 6, 7]>) -> !ifrt.array<tensor<4x8xf32>, #sp, [4, 5, 6, 7]>
    %outputs_4, %control_output_5 = ifrt.CopyArrays(%outputs_2) : (!ifrt.array<tensor<4x8xf32>, #sp, [4, 5, 6, 7]>) -> !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>
    %outputs_6:2, %control_output_7 = ifrt.Call @p2_s2..._calls0to2.mpmd_60::@main(%outputs, %arg0, %outputs_4, %arg2) after %control_output on devices [0, 1, 2, 3] <donated_input_indices = [2]> {ifrt.compile_options_key = "p2_s2..._calls0to2.mpmd_60_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> (!ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>)
    %outputs_8, %control_output_9 = ifrt.Call @p0_s0_calls0to2.mpmd_60::@main(%arg4, %arg0) after %control_output_7 on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p0_s0_calls0to2.mpmd_60_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_10, %control_output_11 = ifrt.CopyArrays(%outputs_8) : (!ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<4x8xf32>, #sp2, [4, 5, 6, 7]>
    %outputs_12, %control_output_13 = ifrt.Call @p1_s1_calls0to2.mpmd_60::@main(%outputs_10, %arg1) after %control_output_3 on devices [4, 5, 6, 7] <donated_input_indices = [0]> {ifrt.compile_options_key = "p1_s1_calls0to2.mpmd_60_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<4x8xf32>, #sp2, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp1, [4, 5, 6, 7]>) -> !ifrt.array<tensor<4x8xf32>, #sp, [4, 5, 6, 7]>
    %outputs_14, %control_output_15 = ifrt.CopyArrays(%outputs_12) : (!ifrt.array<tensor<4x8xf32>, #sp, [4, 5, 6, 7]>) -> !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>
    %outputs_16:2, %control_output_17 = ifrt.Call @p2_s2..._calls0to2.mpmd_60::@main(%outputs_8, %arg0, %outputs_14, %arg2) after %control_output_9 on devices [0, 1, 2, 3] <donated_input_indices = [2]> {ifrt.compile_options_key = "p2_s2..._calls0to2.mpmd_60_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> (!ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>)
    %outputs_18, %control_output_19 = ifrt.Call @p0_s0_calls0to2.mpmd_60::@main(%arg5, %arg0) after %control_output_17 on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p0_s0_calls0to2.mpmd_60_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_20, %control_output_21 = ifrt.CopyArrays(%outputs_18) : (!ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<4x8xf32>, #sp2, [4, 5, 6, 7]>
    %outputs_22, %control_output_23 = ifrt.Call @p1_s1_calls0to2.mpmd_60::@main(%outputs_20, %arg1) after %control_output_13 on devices [4, 5, 6, 7] <donated_input_indices = [0]> {ifrt.compile_options_key = "p1_s1_calls0to2.mpmd_60_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<4x8xf32>, #sp2, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp1, [4, 5, 6, 7]>) -> !ifrt.array<tensor<4x8xf32>, #sp, [4, 5, 6, 7]>
    %outputs_24, %control_output_25 = ifrt.CopyArrays(%outputs_22) : (!ifrt.array<tensor<4x8xf32>, #sp, [4, 5, 6, 7]>) -> !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>
    %outputs_26:2, %control_output_27 = ifrt.Call @p2_s2..._calls0to2.mpmd_60::@main(%outputs_18, %arg0, %outputs_24, %arg2) after %control_output_19 on devices [0, 1, 2, 3] <donated_input_indices = [2]> {ifrt.compile_options_key = "p2_s2..._calls0to2.mpmd_60_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<4x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> (!ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>)
    return %outputs_6#0, %outputs_6#1, %outputs_16#0, %outputs_16#1, %outputs_26#0, %outputs_26#1 : !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<4x8xf32>, #sp, [0, 1, 2, 3]>
  }
  module @p0_s0_calls0to2.mpmd_60 <sym_visibility = "private"> {
    sdy.mesh @mesh = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
    func.func @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) attributes {reserved_hbm_bytes = 832 : i64} {
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
      %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
      %2 = stablehlo.dot_general %1, %arg1, contracting_dims = [1] x [1] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      return %2 : tensor<4x8xf32>
    }
  }
  module @p1_s1_calls0to2.mpmd_60 <sym_visibility = "private"> {
    sdy.mesh @mesh = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
    func.func @main(%arg0: tensor<4x8xf32> {jax.buffer_donor = true, sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<4x8xf32> attributes {reserved_hbm_bytes = 0 : i64} {
      %0 = stablehlo.dot_general %arg1, %arg1, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      %1 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      return %1 : tensor<4x8xf32>
    }
  }
  module @p2_s2..._calls0to2.mpmd_60 <sym_visibility = "private"> {
    sdy.mesh @mesh = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
    func.func @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg2: tensor<4x8xf32> {jax.buffer_donor = true, sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}, %arg3: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {reserved_hbm_bytes = 608 : i64} {
      %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %1 = stablehlo.reverse %0, dims = [1] : tensor<4x8xf32>
      %2 = stablehlo.maximum %arg2, %1 : tensor<4x8xf32>
      %3 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      return %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>
    }
  }
}
