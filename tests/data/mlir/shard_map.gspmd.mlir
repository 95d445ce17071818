module @jit_shard_map_psum attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32> {mhlo.sharding = "{devices=[2,4]<=[8]}"}, %arg1: tensor<16x8xf32> {mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}) -> (tensor<8x8xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "unspecified_dims=[0,1]", mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"} : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = "unspecified_dims=[0,1]", mhlo.sharding = "{devices=[1,1,4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}"} : (tensor<8x16xf32>) -> tensor<8x4xf32>
    %2 = stablehlo.custom_call @Sharding(%arg1) {backend_config = "unspecified_dims=[0,1]", mhlo.sharding = "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"} : (tensor<16x8xf32>) -> tensor<16x8xf32>
    %3 = stablehlo.custom_call @SPMDFullToShardShape(%2) {backend_config = "unspecified_dims=[0,1]", mhlo.sharding = "{devices=[1,1,4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}"} : (tensor<16x8xf32>) -> tensor<4x8xf32>
    %4 = call @shmap_body(%1, %3) : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %5 = stablehlo.custom_call @Sharding(%4) {backend_config = "unspecified_dims=[0,1]", mhlo.sharding = "{devices=[1,1,4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %6 = stablehlo.custom_call @SPMDShardToFullShape(%5) {backend_config = "unspecified_dims=[0,1]", mhlo.sharding = "{replicated}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %6 : tensor<8x8xf32>
  }
  func.func private @shmap_body(%arg0: tensor<8x4xf32>, %arg1: tensor<4x8xf32>) -> (tensor<8x8xf32> {jax.result_info = "[None, None]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {backend_config = "unspecified_dims=[0,1]", mhlo.sharding = "{devices=[1,1,4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %2 = stablehlo.custom_call @Sharding(%1) {backend_config = "", mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dims={manual}}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %3 = "stablehlo.all_reduce"(%2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %5 = stablehlo.add %arg2, %arg3 : tensor<f32>
      %6 = stablehlo.custom_call @Sharding(%5) {backend_config = "", mhlo.sharding = "{devices=[4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}"} : (tensor<f32>) -> tensor<f32>
      stablehlo.return %6 : tensor<f32>
    }) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %4 = stablehlo.custom_call @Sharding(%3) {backend_config = "unspecified_dims=[0,1]", mhlo.sharding = "{devices=[1,1,4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %4 : tensor<8x8xf32>
  }
}
