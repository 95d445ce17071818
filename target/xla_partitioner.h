// `xla` (alias `gspmd`) and `shardy`: XLA's own SPMD partitioners in the pinned jaxlib, driven
// through the worker (target/xla_worker.h). A module that came from jax (StableHLO, kept as
// HloModule::jax_source) is compiled from jax's text as jax.jit would compile it; any other
// module goes as HLO text (named-mesh shardings printed as V2 for jaxlibs before 0.11). `xla`
// compiles with GSPMD's sharding propagation then its SPMD partitioner; `shardy` imports the
// module's shardings into Shardy (see workers/xla/shardy_import.py), runs Shardy's propagation
// (ShardyXLA), then the same spmd-partitioning pass. A `shardy` run counts only with evidence that
// Shardy ran (its `after_shardy-xla` dump exists and XLA printed no fallback warning).
#ifndef SPMDCHECK_TARGET_XLA_PARTITIONER_H_
#define SPMDCHECK_TARGET_XLA_PARTITIONER_H_

#include <memory>
#include <string>

#include "target/partitioner_under_test.h"
#include "target/xla_worker.h"

namespace spmdcheck::target {

std::shared_ptr<XlaWorker> MakeXlaWorker(const TargetOptions& options);

class XlaExecutable;  // xla_partitioner.cc: an executable in the worker.

class XlaPartitioner : public PartitionerUnderTest, public PassDumping, public JaxReproducible {
 public:
  XlaPartitioner(std::string spec, std::shared_ptr<XlaWorker> worker, const TargetOptions& options);
  std::string spec() const override { return spec_; }
  static PartitionerCapabilities Capabilities(bool shardy);
  PartitionerCapabilities capabilities() const override { return Capabilities(shardy_); }
  PassDumping* pass_dumping() override { return this; }
  JaxReproducible* jax_reproducible() override { return this; }
  absl::StatusOr<PartitionOutput> Partition(const HloModule& global,
                                            int64_t num_partitions) override;
  absl::StatusOr<std::vector<Literal>> RunGlobal(const HloModule& global,
                                                 const std::vector<Literal>& arguments) override;
  bool InvalidOutputIsItsFault() const override { return false; }
  double RuntimeSeconds() const override { return worker_->xla_seconds(); }
  // A module from jax with manual computations (shard_map) has no one-device meaning: its
  // reference is the same StableHLO with every value outside the manual computations replicated
  // (workers/xla/jit_route.py), run on every device with whole inputs.
  std::string GlobalRunName() const override { return global_run_name_; }
  // A module read from jax's StableHLO (HloModule::jax_source) lowered for this partitioner
  // (sdy for Shardy, mhlo.sharding for GSPMD) is compiled from that text with jax's compile
  // options (workers/xla/jit_route.py): what jax.jit would send to XLA.
  bool UsesJaxSource(const HloModule& global) const override;
  // Through jaxlib in this partitioner's worker (target/jax_import.h).
  absl::StatusOr<std::unique_ptr<HloModule>> ImportJaxProgram(const std::string& text,
                                                              const std::string& name) override;
  // The StableHLO text XLA compiles for `global` (Shardy: with its shardings imported as sdy
  // shardings), for standalone repros.
  absl::StatusOr<std::string> StableHloText(const HloModule& global,
                                            int64_t num_partitions) override;
  bool shardy() const override { return shardy_; }
  // Dump every pass's output into PartitionOutput::pass_dumps (slower: for pass bisection).
  void set_dump_passes(bool on) override { dump_passes_ = on; }
  // "jax 0.10.2, jaxlib 0.10.2" once the worker started.
  std::string versions() const override { return worker_->versions(); }

 private:
  // HLO text for the worker: named-mesh shardings kept when its jaxlib reads them.
  std::string HloTextFor(const HloModule& module);
  std::string spec_;
  bool shardy_;
  std::shared_ptr<XlaWorker> worker_;
  double timeout_seconds_;
  bool dump_passes_ = false;
  std::string global_run_name_ = "single-device run";
  // The reference executable of the last RunGlobal, reused by the next trials of the same
  // program (until the next Partition or a worker restart).
  struct GlobalRun {
    std::string key;  // The compile request.
    std::shared_ptr<XlaExecutable> executable;
  };
  GlobalRun global_run_;
};

}  // namespace spmdcheck::target

#endif  // SPMDCHECK_TARGET_XLA_PARTITIONER_H_
