// Shardy's round-trip form -> GSPMD's form. When jaxlib prints a Shardy module (jax's default
// lowering: `sdy.mesh`, `sdy.sharding`, `sdy.manual_computation`) as HLO, it writes every
// sharding as an HloSharding but keeps Shardy's own pieces for XLA's Shardy pipeline to import
// again: the meshes as the module's `xla.sdy.meshes` frontend attribute, results as
// `xla.sdy.FuncResultSharding` custom-calls, and each manual computation as
// `xla.sdy.GlobalToLocalShape` -> call of `xla.sdy.manual_computation_body.N` ->
// `xla.sdy.LocalToGlobalShape`, its body's shardings written without the manual axes. This
// rewrites such a module into what jax's GSPMD lowering writes for the same program, which every
// partitioner (ours, GSPMD, Shardy through the worker's import) and the oracle read:
//   * FuncResultSharding -> a `Sharding` custom-call with its sharding;
//   * GlobalToLocalShape -> per operand `Sharding` (global) + `SPMDFullToShardShape` (manual);
//     LocalToGlobalShape -> per result `Sharding` (manual) + `SPMDShardToFullShape` (global);
//   * shardings inside manual bodies (and what they call) recomputed from their `xla.sdy.sharding`
//     with the manual axes as a manual subgroup;
//   * every `xla.sdy.*` frontend attribute dropped.
// jaxlib 0.12 writes the same pieces with named-mesh shardings (ir/named_sharding.h) instead:
// no `xla.sdy.meshes` (each sharding names its mesh), GlobalToLocalShape after a `Sharding` of
// the global value with its own sharding `{mesh[...], [...], manual={'x'}}`, LocalToGlobalShape
// with the global sharding, bodies over the whole mesh without the manual axes, and
// `xla.sdy.ShardingGroup` custom-calls of shape () for shard_alike groups. That form is rewritten
// the same way: GlobalToLocalShape -> SPMDFullToShardShape; LocalToGlobalShape -> `Sharding`
// (manual) + SPMDShardToFullShape; the manual axes added to every named sharding in a body;
// ShardingGroup calls dropped (they carry no value).
#ifndef SPMDCHECK_IR_SDY_SHARDING_ROUND_TRIP_H_
#define SPMDCHECK_IR_SDY_SHARDING_ROUND_TRIP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"

namespace spmdcheck {

// True when the module carries Shardy's round-trip form (`xla.sdy.meshes`, or jaxlib 0.12's
// `xla.sdy.*` custom-calls).
bool HasShardyRoundTrip(const HloModule& module);

// Rewrites the module in place; returns the number of instructions rewritten. New instructions
// are appended to their computations: print and parse the module again for program order.
// Errors: shardings or attributes that do not parse, meshes that are not declared.
absl::StatusOr<int64_t> LowerShardyRoundTrip(HloModule& module);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_SDY_SHARDING_ROUND_TRIP_H_
