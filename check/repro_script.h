// Standalone repro scripts: `repro.py` files that reproduce a partitioning difference with
// nothing but `pip install jax==V`. The script compiles the global module for one CPU device
// and, sharded, for N CPU devices, runs both on the inputs that showed the difference, prints
// both results and exits 1 when they differ (0 when they agree, 2 when it cannot run). An XLA
// crash ends the process with XLA's message, as it would for the user.
//
// How the sharded program comes about depends on the partitioner under test:
//  * xla (GSPMD): the script hands the global HLO to XLA with SPMD partitioning on;
//  * shardy: the script compiles the StableHLO module with Shardy shardings that the XLA worker
//    made from the HLO (the HLO route would silently fall back to GSPMD);
//  * any other partitioner (reference, cmd:): the script runs the per-device program that
//    partitioner wrote, unpartitioned, on N devices with each device's shard of the inputs, so
//    XLA's runtime is the judge of another partitioner's output.
#ifndef SPMDCHECK_CHECK_REPRO_SCRIPT_H_
#define SPMDCHECK_CHECK_REPRO_SCRIPT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "target/partitioner_under_test.h"

namespace spmdcheck::check {

enum class ReproMode { kGspmd, kShardy, kPartitioned };
const char* ReproModeName(ReproMode mode);

// Everything a script embeds.
struct ReproScript {
  ReproMode mode = ReproMode::kGspmd;
  int64_t num_partitions = 1;
  std::string jax_version;  // The jax the difference was seen with ("0.10.2").
  std::string global_hlo;
  // kShardy: StableHLO text with sdy shardings; kPartitioned: the per-device HLO.
  std::string sharded_text;
  // kPartitioned: the shardings the per-device program was judged with.
  std::vector<std::string> parameter_shardings;
  std::vector<std::string> output_shardings;
  std::vector<Literal> inputs;  // Global inputs, one per entry parameter.
  std::string title;            // The docstring's first line.
  std::string found;            // What spmdcheck saw (printed when the script reproduces it).
  std::string command;          // The spmdcheck command that wrote it.
};

// The Python source. InvalidArgument for inputs that cannot be embedded (tuples, elided).
absl::StatusOr<std::string> RenderReproScript(const ReproScript& script);

struct ReproRequest {
  uint64_t seed = 1;  // Inputs: oracle::TrialInputs(global, seed, trial, small integers).
  int64_t trial = 0;
  int64_t num_partitions = 0;  // 0: the module's.
  std::string found;
  std::string command;
};

// Builds the script for `global` under `partitioner`: for xla nothing runs; for shardy the
// XLA worker converts the module; for any other partitioner it partitions the module (a
// partitioning failure is returned as an error with the partitioner's message).
absl::StatusOr<ReproScript> MakeReproScript(const HloModule& global,
                                            target::PartitionerUnderTest& partitioner,
                                            const ReproRequest& request);

}  // namespace spmdcheck::check

#endif  // SPMDCHECK_CHECK_REPRO_SCRIPT_H_
