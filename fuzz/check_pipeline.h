// generate/load -> partition -> oracle check: the one judgement the CLI (`check`), the reducer
// and the fuzz campaign share.
#ifndef SPMDCHECK_FUZZ_CHECK_PIPELINE_H_
#define SPMDCHECK_FUZZ_CHECK_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"
#include "ir/verdict.h"
#include "oracle/equivalence.h"
#include "partitioner/partitioner.h"

namespace spmdcheck::fuzz {

struct CheckOptions {
  int64_t num_partitions = 0;  // 0: the module's.
  int64_t trials = 2;
  uint64_t seed = 1;
  std::string inject_bug;  // Empty: none.
  bool shrink = true;      // Shrink shapes over the oracle's budget first.
  // Evaluate bf16/f16/f8 programs as f32 (partitioning reorders sums; in narrow types that
  // changes roundings, which is not a partitioning bug). Both programs are widened alike.
  bool widen_narrow_floats = true;
  int64_t max_elements_per_array = int64_t{1} << 22;
  // With `shrink`: modules with a larger array are shrunk until every array has at most this
  // many elements (small arrays keep 64-device checks fast).
  int64_t shrink_elements_per_array = int64_t{1} << 12;
};

enum class CheckStatus {
  kHolds,        // partition(P) equals P on every trial.
  kFails,        // A counterexample (report.verdict == kFails).
  kUnsupported,  // The oracle or partitioner cannot judge it (report says why).
  kCrash,        // The partitioner returned an internal error or produced invalid HLO.
};

struct CheckOutcome {
  CheckStatus status = CheckStatus::kUnsupported;
  std::string message;             // One line: why unsupported / crash, or the first mismatch.
  std::string shrink_note;         // Non-empty when shapes were shrunk: what to.
  std::vector<std::string> notes;  // How the module was prepared (e.g. narrow floats widened).
  oracle::EquivReport report;
  partitioner::PartitionStats stats;
  std::unique_ptr<HloModule> partitioned;  // May be null (crash before partitioning ended).
  // When the module was widened or shrunk for the check: the partitioning of the module as
  // written (what costs are reported on). Null otherwise.
  std::unique_ptr<HloModule> as_written;
};

// InvalidArgument only for a module that does not verify; everything else is an outcome.
absl::StatusOr<CheckOutcome> CheckPartitioning(const HloModule& global,
                                               const CheckOptions& options);

}  // namespace spmdcheck::fuzz

#endif  // SPMDCHECK_FUZZ_CHECK_PIPELINE_H_
