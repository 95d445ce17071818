#sp = #ifrt.sharding_param<4x1 to [0] on 4>
#sp1 = #ifrt.sharding_param<1x1 to [0] on 2>
#sp2 = #ifrt.sharding_param<1x1 to [0] on 4>
#sp3 = #ifrt.sharding_param<1x4 to [0] on 4>
module @mpmd_1 {
  sdy.mesh @m0 = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
  sdy.mesh @m1 = <["x"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
  func.func public @main(%arg0: !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, %arg1: !ifrt.array<tensor<8x8xf32>, #sp1, [4, 5]>, %arg2: !ifrt.array<tensor<8x8xf32>, #sp2, [0, 1, 2, 3]>, %arg3: !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, %arg4: !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>) -> (!ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>) attributes {ifrt.function} {
    %outputs, %control_output = ifrt.Call @p0_s0_fwd_calls0to1.mpmd_1::@main(%arg3, %arg0) on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p0_s0_fwd_calls0to1.mpmd_1_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_0:3, %control_output_1 = ifrt.Reshard(%arg4, %arg3, %outputs) : (!ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>) -> (!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>)
    %outputs_2, %control_output_3 = ifrt.Call @p1_s1_fwd_calls0to1.mpmd_1::@main(%outputs_0#2, %outputs_0#1, %arg1) on devices [4, 5] <io_aliases = [array<i32: 1, 0>]> {ifrt.compile_options_key = "p1_s1_fwd_calls0to1.mpmd_1_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<8x8xf32>, #sp1, [4, 5]>) -> !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>
    %outputs_4, %control_output_5 = ifrt.Reshard(%outputs_2) : (!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>) -> !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_6, %control_output_7 = ifrt.Call @p2_s2_fwd_calls0to1.mpmd_1::@main(%outputs_4, %arg2) after %control_output on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p2_s2_fwd_calls0to1.mpmd_1_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_8, %control_output_9 = ifrt.Call @p0_s0_fwd_calls0to1.mpmd_1::@main(%arg4, %arg0) after %control_output_7 on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p0_s0_fwd_calls0to1.mpmd_1_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_10, %control_output_11 = ifrt.Reshard(%outputs_8) : (!ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>
    %outputs_12, %control_output_13 = ifrt.Call @p1_s1_fwd_calls0to1.mpmd_1::@main(%outputs_10, %outputs_0#0, %arg1) after %control_output_3 on devices [4, 5] <io_aliases = [array<i32: 1, 0>]> {ifrt.compile_options_key = "p1_s1_fwd_calls0to1.mpmd_1_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<8x8xf32>, #sp1, [4, 5]>) -> !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>
    %outputs_14, %control_output_15 = ifrt.Reshard(%outputs_12) : (!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>) -> !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_16, %control_output_17 = ifrt.Call @p2_s2_fwd_calls0to1.mpmd_1::@main(%outputs_14, %arg2) after %control_output_9 on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p2_s2_fwd_calls0to1.mpmd_1_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_18, %control_output_19 = ifrt.Call @p3_s2_bwd_calls0to1.mpmd_1::@main(%outputs_6, %outputs_4, %arg2) after %control_output_17 on devices [0, 1, 2, 3] <io_aliases = [array<i32: 0, 0>], donated_input_indices = [1]> {ifrt.compile_options_key = "p3_s2_bwd_calls0to1.mpmd_1_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_20, %control_output_21 = ifrt.Reshard(%outputs_18) : (!ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>
    %outputs_22, %control_output_23 = ifrt.Call @p4_s1_bwd_calls0to1.mpmd_1::@main(%outputs_20, %outputs_0#2, %arg1) after %control_output_13 on devices [4, 5] <io_aliases = [array<i32: 0, 0>], donated_input_indices = [1]> {ifrt.compile_options_key = "p4_s1_bwd_calls0to1.mpmd_1_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<8x8xf32>, #sp1, [4, 5]>) -> !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>
    %outputs_24, %control_output_25 = ifrt.Reshard(%outputs_22) : (!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>) -> !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>
    %outputs_26, %control_output_27 = ifrt.Call @p5_s0_bwd_calls0to1.mpmd_1::@main(%outputs_24, %arg3, %arg0) after %control_output_19 on devices [0, 1, 2, 3] <io_aliases = [array<i32: 0, 0>]> {ifrt.compile_options_key = "p5_s0_bwd_calls0to1.mpmd_1_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>
    %outputs_28, %control_output_29 = ifrt.Call @p3_s2_bwd_calls0to1.mpmd_1::@main(%outputs_16, %outputs_14, %arg2) after %control_output_27 on devices [0, 1, 2, 3] <io_aliases = [array<i32: 0, 0>], donated_input_indices = [1]> {ifrt.compile_options_key = "p3_s2_bwd_calls0to1.mpmd_1_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>
    %outputs_30, %control_output_31 = ifrt.Reshard(%outputs_28) : (!ifrt.array<tensor<6x8xf32>, #sp2, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>
    %outputs_32, %control_output_33 = ifrt.Call @p4_s1_bwd_calls0to1.mpmd_1::@main(%outputs_30, %outputs_10, %arg1) after %control_output_23 on devices [4, 5] <io_aliases = [array<i32: 0, 0>], donated_input_indices = [1]> {ifrt.compile_options_key = "p4_s1_bwd_calls0to1.mpmd_1_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>, !ifrt.array<tensor<8x8xf32>, #sp1, [4, 5]>) -> !ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>
    %outputs_34, %control_output_35 = ifrt.Reshard(%outputs_32) : (!ifrt.array<tensor<6x8xf32>, #sp1, [4, 5]>) -> !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>
    %outputs_36, %control_output_37 = ifrt.Call @p5_s0_bwd_calls0to1.mpmd_1::@main(%outputs_34, %arg4, %arg0) after %control_output_29 on devices [0, 1, 2, 3] <io_aliases = [array<i32: 0, 0>]> {ifrt.compile_options_key = "p5_s0_bwd_calls0to1.mpmd_1_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>
    return %outputs_26, %outputs_36 : !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>, !ifrt.array<tensor<6x8xf32>, #sp3, [0, 1, 2, 3]>
  }
  module @p0_s0_fwd_calls0to1.mpmd_1 <sym_visibility = "private"> {
    sdy.mesh @m0 = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
    func.func @main(%arg0: tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@m0, [{}, {"x"}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m0, [{"x"}, {}]>}) -> tensor<6x8xf32> attributes {reserved_hbm_bytes = 688 : i64} {
      %0 = stablehlo.dot_general %arg1, %arg1, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      %1 = stablehlo.subtract %0, %arg1 : tensor<8x8xf32>
      %2 = stablehlo.subtract %1, %1 : tensor<8x8xf32>
      %3 = stablehlo.slice %2 [0:8, 0:4] : (tensor<8x8xf32>) -> tensor<8x4xf32>
      %4 = stablehlo.slice %2 [0:8, 4:8] : (tensor<8x8xf32>) -> tensor<8x4xf32>
      %5 = stablehlo.concatenate %4, %3, dim = 1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
      %6 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [1] : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
      %7 = stablehlo.dot_general %6, %5, contracting_dims = [1] x [0] : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
      return %7 : tensor<6x8xf32>
    }
  }
  module @p1_s1_fwd_calls0to1.mpmd_1 <sym_visibility = "private"> {
    sdy.mesh @m1 = <["x"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
    func.func @main(%arg0: tensor<6x8xf32>, %arg1: tensor<6x8xf32> {tf.aliasing_output = 0 : i32}, %arg2: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m1, [{}, {}]>}) -> tensor<6x8xf32> attributes {reserved_hbm_bytes = 192 : i64} {
      %cst = stablehlo.constant dense<4.000000e+00> : tensor<f32>
      %cst_0 = stablehlo.constant dense<-4.000000e+00> : tensor<f32>
      %0 = stablehlo.dot_general %arg0, %arg2, contracting_dims = [1] x [1] : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
      %1 = stablehlo.slice %arg1 [0:6, 0:4] : (tensor<6x8xf32>) -> tensor<6x4xf32>
      %2 = stablehlo.slice %arg1 [0:6, 4:8] : (tensor<6x8xf32>) -> tensor<6x4xf32>
      %3 = stablehlo.concatenate %2, %1, dim = 1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
      %4 = stablehlo.clamp %cst_0, %0, %cst : (tensor<f32>, tensor<6x8xf32>, tensor<f32>) -> tensor<6x8xf32>
      %5 = stablehlo.add %3, %4 : tensor<6x8xf32>
      return %5 : tensor<6x8xf32>
    }
  }
  module @p2_s2_fwd_calls0to1.mpmd_1 <sym_visibility = "private"> {
    sdy.mesh @m0 = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
    func.func @main(%arg0: tensor<6x8xf32>, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m0, [{}, {}]>}) -> tensor<6x8xf32> attributes {reserved_hbm_bytes = 544 : i64} {
      %0 = stablehlo.maximum %arg0, %arg0 : tensor<6x8xf32>
      %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0] : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
      return %1 : tensor<6x8xf32>
    }
  }
  module @p3_s2_bwd_calls0to1.mpmd_1 <sym_visibility = "private"> {
    sdy.mesh @m0 = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
    func.func @main(%arg0: tensor<6x8xf32> {tf.aliasing_output = 0 : i32}, %arg1: tensor<6x8xf32> {jax.buffer_donor = true}, %arg2: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m0, [{}, {}]>}) -> tensor<6x8xf32> attributes {reserved_hbm_bytes = 544 : i64} {
      %0 = stablehlo.negate %arg2 : tensor<8x8xf32>
      %1 = stablehlo.abs %arg1 : tensor<6x8xf32>
      %2 = stablehlo.dot_general %1, %0, contracting_dims = [1] x [0] : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
      %3 = stablehlo.negate %arg0 : tensor<6x8xf32>
      %4 = stablehlo.multiply %2, %arg0 : tensor<6x8xf32>
      %5 = stablehlo.subtract %3, %4 : tensor<6x8xf32>
      return %5 : tensor<6x8xf32>
    }
  }
  module @p4_s1_bwd_calls0to1.mpmd_1 <sym_visibility = "private"> {
    sdy.mesh @m1 = <["x"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}]}}
    func.func @main(%arg0: tensor<6x8xf32> {tf.aliasing_output = 0 : i32}, %arg1: tensor<6x8xf32> {jax.buffer_donor = true}, %arg2: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m1, [{}, {}]>}) -> tensor<6x8xf32> attributes {reserved_hbm_bytes = 192 : i64} {
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<6x8xf32>, tensor<f32>) -> tensor<6xf32>
      %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<6xf32>) -> tensor<6x8xf32>
      %2 = stablehlo.subtract %arg2, %arg2 : tensor<8x8xf32>
      %3 = stablehlo.multiply %2, %arg2 : tensor<8x8xf32>
      %4 = stablehlo.subtract %arg1, %1 : tensor<6x8xf32>
      %5 = stablehlo.dot_general %4, %3, contracting_dims = [1] x [1] : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
      return %5 : tensor<6x8xf32>
    }
  }
  module @p5_s0_bwd_calls0to1.mpmd_1 <sym_visibility = "private"> {
    sdy.mesh @m0 = <["x"=4]> {stablehlo.mesh = {axes = [{name = "x", size = 4 : i64}]}}
    func.func @main(%arg0: tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@m0, [{}, {"x"}]>, tf.aliasing_output = 0 : i32}, %arg1: tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@m0, [{}, {"x"}]>}, %arg2: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@m0, [{"x"}, {}]>}) -> (tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@m0, [{}, {"x"}]>}) attributes {reserved_hbm_bytes = 688 : i64} {
      %0 = stablehlo.dot_general %arg0, %arg2, contracting_dims = [1] x [0] : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
      %1 = stablehlo.subtract %arg1, %0 : tensor<6x8xf32>
      return %1 : tensor<6x8xf32>
    }
  }
}
