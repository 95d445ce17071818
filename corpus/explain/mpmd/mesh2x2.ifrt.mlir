#sp = #ifrt.sharding_param<1x1 to [0] on 4>
module @mpmd_27 {
  sdy.mesh @mesh = <["x"=2, "y"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}}
  func.func public @main(%arg0: !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, %arg1: !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, %arg2: !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, %arg3: !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, %arg4: !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, %arg5: !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> (!ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>) attributes {ifrt.function} {
    %outputs, %control_output = ifrt.Call @p0_s0_calls0to1.mpmd_27::@main(%arg4, %arg0) on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p0_s0_calls0to1.mpmd_27_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>
    %outputs_0:3, %control_output_1 = ifrt.CopyArrays(%arg5, %arg4, %outputs) : (!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> (!ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>)
    %outputs_2, %control_output_3 = ifrt.Call @p1_s1_calls0to1.mpmd_27::@main(%outputs_0#2, %arg1) on devices [4, 5, 6, 7] <io_aliases = [array<i32: 0, 0>]> {ifrt.compile_options_key = "p1_s1_calls0to1.mpmd_27_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>
    %outputs_4, %control_output_5 = ifrt.CopyArrays(%outputs_2) : (!ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>
    %outputs_6, %control_output_7 = ifrt.Call @p2_s2_calls0to1.mpmd_27::@main(%outputs_4, %arg2) after %control_output on devices [0, 1, 2, 3] <io_aliases = [array<i32: 0, 0>]> {ifrt.compile_options_key = "p2_s2_calls0to1.mpmd_27_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>
    %outputs_8, %control_output_9 = ifrt.CopyArrays(%outputs_6) : (!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>
    %outputs_10, %control_output_11 = ifrt.Call @p3_s3_calls0to1.mpmd_27::@main(%outputs_8, %outputs_0#1, %arg3) after %control_output_3 on devices [4, 5, 6, 7] <io_aliases = [array<i32: 0, 0>], donated_input_indices = [1]> {ifrt.compile_options_key = "p3_s3_calls0to1.mpmd_27_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>
    %outputs_12, %control_output_13 = ifrt.Call @p0_s0_calls0to1.mpmd_27::@main(%arg5, %arg0) after %control_output_7 on devices [0, 1, 2, 3] {ifrt.compile_options_key = "p0_s0_calls0to1.mpmd_27_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>
    %outputs_14, %control_output_15 = ifrt.CopyArrays(%outputs_12) : (!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>
    %outputs_16, %control_output_17 = ifrt.Call @p1_s1_calls0to1.mpmd_27::@main(%outputs_14, %arg1) after %control_output_11 on devices [4, 5, 6, 7] <io_aliases = [array<i32: 0, 0>]> {ifrt.compile_options_key = "p1_s1_calls0to1.mpmd_27_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>
    %outputs_18, %control_output_19 = ifrt.CopyArrays(%outputs_16) : (!ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>
    %outputs_20, %control_output_21 = ifrt.Call @p2_s2_calls0to1.mpmd_27::@main(%outputs_18, %arg2) after %control_output_13 on devices [0, 1, 2, 3] <io_aliases = [array<i32: 0, 0>]> {ifrt.compile_options_key = "p2_s2_calls0to1.mpmd_27_mesh_m0", ifrt.mesh_name = "m0"} : (!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>, !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>
    %outputs_22, %control_output_23 = ifrt.CopyArrays(%outputs_20) : (!ifrt.array<tensor<8x8xf32>, #sp, [0, 1, 2, 3]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>
    %outputs_24, %control_output_25 = ifrt.Call @p3_s3_calls0to1.mpmd_27::@main(%outputs_22, %outputs_0#0, %arg3) after %control_output_17 on devices [4, 5, 6, 7] <io_aliases = [array<i32: 0, 0>], donated_input_indices = [1]> {ifrt.compile_options_key = "p3_s3_calls0to1.mpmd_27_mesh_m1", ifrt.mesh_name = "m1"} : (!ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>) -> !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>
    return %outputs_10, %outputs_24 : !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>, !ifrt.array<tensor<8x8xf32>, #sp, [4, 5, 6, 7]>
  }
  module @p0_s0_calls0to1.mpmd_27 <sym_visibility = "private"> {
    func.func @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {reserved_hbm_bytes = 512 : i64} {
      %0 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
      %1 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [1] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      return %1 : tensor<8x8xf32>
    }
  }
  module @p1_s1_calls0to1.mpmd_27 <sym_visibility = "private"> {
    sdy.mesh @mesh = <["x"=2, "y"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}}
    func.func @main(%arg0: tensor<8x8xf32> {tf.aliasing_output = 0 : i32}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> tensor<8x8xf32> attributes {reserved_hbm_bytes = 768 : i64} {
      %0 = stablehlo.subtract %arg0, %arg0 : tensor<8x8xf32>
      %1 = stablehlo.slice %0 [0:8, 0:4] : (tensor<8x8xf32>) -> tensor<8x4xf32>
      %2 = stablehlo.slice %0 [0:8, 4:8] : (tensor<8x8xf32>) -> tensor<8x4xf32>
      %3 = stablehlo.concatenate %2, %1, dim = 1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
      %4 = stablehlo.subtract %3, %arg0 : tensor<8x8xf32>
      %5 = stablehlo.tanh %arg1 : tensor<8x8xf32>
      %6 = stablehlo.dot_general %4, %5, contracting_dims = [1] x [1] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      return %6 : tensor<8x8xf32>
    }
  }
  module @p2_s2_calls0to1.mpmd_27 <sym_visibility = "private"> {
    func.func @main(%arg0: tensor<8x8xf32> {tf.aliasing_output = 0 : i32}, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {reserved_hbm_bytes = 768 : i64} {
      %0 = stablehlo.subtract %arg1, %arg1 : tensor<8x8xf32>
      %1 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      return %1 : tensor<8x8xf32>
    }
  }
  module @p3_s3_calls0to1.mpmd_27 <sym_visibility = "private"> {
    func.func @main(%arg0: tensor<8x8xf32> {tf.aliasing_output = 0 : i32}, %arg1: tensor<8x8xf32> {jax.buffer_donor = true}, %arg2: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {reserved_hbm_bytes = 512 : i64} {
      %0 = stablehlo.slice %arg0 [0:8, 0:4] : (tensor<8x8xf32>) -> tensor<8x4xf32>
      %1 = stablehlo.slice %arg0 [0:8, 4:8] : (tensor<8x8xf32>) -> tensor<8x4xf32>
      %2 = stablehlo.concatenate %1, %0, dim = 1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
      %3 = stablehlo.dot_general %arg1, %arg2, contracting_dims = [1] x [1] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
      %4 = stablehlo.subtract %2, %3 : tensor<8x8xf32>
      return %4 : tensor<8x8xf32>
    }
  }
}
