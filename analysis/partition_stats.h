// How a partitioner dealt with a module's instructions: how many it partitioned with a handler
// made for the op and how many it had to replicate, compute and reshard instead (by reason).
// A plain value: the reference partitioner fills it, the partitioner-under-test interface
// carries it (target/partitioner_under_test.h, PartitionOutput::stats), the check pipeline keeps
// it in its outcome and `partition --stats` / `check --stats` print it.
#ifndef SPMDCHECK_ANALYSIS_PARTITION_STATS_H_
#define SPMDCHECK_ANALYSIS_PARTITION_STATS_H_

#include <cstdint>
#include <map>
#include <string>

namespace spmdcheck::analysis {

struct PartitionStats {
  int64_t instructions = 0;
  int64_t handled = 0;
  // Instructions that took the replicate-compute-reshard fallback, by reason.
  std::map<std::string, int64_t> fallback_reasons;
  int64_t fallbacks() const {
    int64_t n = 0;
    for (const auto& [reason, count] : fallback_reasons) n += count;
    return n;
  }
};

}  // namespace spmdcheck::analysis

#endif  // SPMDCHECK_ANALYSIS_PARTITION_STATS_H_
