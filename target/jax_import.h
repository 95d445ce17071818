// Modules from jax: the StableHLO text `jax.jit(f).lower(...).as_text()` prints (sdy dialect or
// mhlo.sharding) as an HloModule for the oracle and our partitioner, converted by jaxlib in the
// XLA worker (its `to_hlo`), Shardy's round-trip form rewritten as GSPMD's
// (ir/sdy_sharding_round_trip.h), and the text kept as the module's jax_source, which XLA's
// partitioners compile the way jax.jit does.
#ifndef SPMDCHECK_TARGET_JAX_IMPORT_H_
#define SPMDCHECK_TARGET_JAX_IMPORT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"
#include "target/xla_worker.h"

namespace spmdcheck::target {

// Errors: Unavailable when jax is not (the worker cannot start; the message says why);
// InvalidArgument when jaxlib refuses the text (`PATH:LINE:COL: ...`) or the HLO does not
// parse. `path` names the text in messages. Parser warnings go to `warnings` when given. The
// module is not verified (the caller does that, with its own message form).
absl::StatusOr<std::unique_ptr<HloModule>> ImportStableHlo(
    XlaWorker& worker, const std::string& text, const std::string& path,
    std::vector<std::string>* warnings = nullptr, double timeout_seconds = 300);

}  // namespace spmdcheck::target

#endif  // SPMDCHECK_TARGET_JAX_IMPORT_H_
