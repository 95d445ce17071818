// Running a global program (the one before partitioning) on our interpreter. A global program
// with manual regions (SPMDFullToShardShape ... SPMDShardToFullShape, as jax's shard_map writes
// them) is SPMD inside them: it runs on every device with the whole inputs, and device 0 holds
// the global result.
#ifndef SPMDCHECK_ORACLE_GLOBAL_RUN_H_
#define SPMDCHECK_ORACLE_GLOBAL_RUN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "oracle/engine.h"

namespace spmdcheck::oracle {

// Whether `module` has manual regions (an SPMDFullToShardShape custom-call).
bool HasManualRegions(const HloModule& module);

// The array leaves (a tuple's elements, flattened in order) of a value.
std::vector<const Literal*> LiteralLeaves(const Literal& literal);

// Runs `global` on `inputs` and returns its result's array leaves. `options.num_partitions` is
// the device count a program with manual regions runs on (ignored without them: one device).
// Errors are the engine's: Unimplemented for an op it does not run, ResourceExhausted for a
// limit, DeadlineExceeded past `options.deadline`.
absl::StatusOr<std::vector<Literal>> RunGlobalProgram(const HloModule& global,
                                                      const std::vector<Literal>& inputs,
                                                      EngineOptions options);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_GLOBAL_RUN_H_
