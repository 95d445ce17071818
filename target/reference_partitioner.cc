#include "target/reference_partitioner.h"

#include <chrono>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "partitioner/partitioner.h"

namespace spmdcheck::target {

PartitionerCapabilities ReferencePartitioner::Capabilities() {
  PartitionerCapabilities c;
  c.in_process = true;
  c.injected_bugs = true;
  c.handler_stats = true;
  c.lint_planner = true;
  return c;
}

absl::StatusOr<PartitionOutput> ReferencePartitioner::Partition(const HloModule& global,
                                                                int64_t num_partitions) {
  PartitionOutput output;
  output.report.name = "reference";
  output.report.version = "spmdcheck";
  if (!inject_bug_.empty()) output.report.notes.push_back("injected bug: " + inject_bug_);
  partitioner::PartitionOptions options;
  options.num_partitions = num_partitions;
  options.inject_bug = inject_bug_;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<partitioner::PartitionResult> result =
      partitioner::PartitionModule(global, options);
  output.report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    if (absl::IsInvalidArgument(result.status())) return result.status();
    output.status = absl::IsUnimplemented(result.status()) ? PartitionStatus::kUnsupported
                                                           : PartitionStatus::kCrash;
    output.message = output.status == PartitionStatus::kUnsupported
                         ? absl::StrCat("partitioner: ", result.status().message())
                         : absl::StrCat("partitioner error: ", result.status().ToString());
    return output;
  }
  output.status = PartitionStatus::kOk;
  output.partitioned = std::move(result->module);
  output.stats = std::move(result->stats);
  output.claims = std::move(result->step_claims);
  output.called_claims = std::move(result->called_step_claims);
  return output;
}

}  // namespace spmdcheck::target
