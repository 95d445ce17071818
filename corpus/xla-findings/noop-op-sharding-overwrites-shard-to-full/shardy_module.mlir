// The same under Shardy (jax 0.12.0.1 only; 0.10.2 holds): a manual_computation result fed to an
// identity transpose with an explicit sdy.sharding. spmdcheck check shardy_module.mlir --partitioner shardy
// reports shardy.xla-rejects-valid.custom_call_handler (and names shardy-sharding-group-manual-out-sharding,
// whose signature it shares; that finding needs a sharding group, this one does not).
module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["a"=4]>
  func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}]>}) -> (tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}]>] out_shardings=[<@mesh, [{"a"}]>] manual_axes={"a"} (%x: tensor<2xf32>) {
      sdy.return %x : tensor<2xf32>
    } : (tensor<8xf32>) -> tensor<8xf32>
    %1 = stablehlo.transpose %0, dims = [0] {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}]>]>} : (tensor<8xf32>) -> tensor<8xf32>
    return %1 : tensor<8xf32>
  }
}
