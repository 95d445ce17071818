// The alpha-beta cost model the resharding planner, the handlers, the lint, explain and the
// reports share.
//
// A collective step costs `kAlphaBytes` (its latency, expressed as the bytes a link moves in
// that time) plus the bytes the busiest device receives. Per collective, with n the group size
// and b the operand bytes of one device (ring algorithms, as NCCL and ICI implement them):
//   all-gather       receives (n-1)*b, sends (n-1)*b
//   all-reduce       receives 2(n-1)/n*b, sends the same (reduce-scatter + all-gather)
//   reduce-scatter   receives (n-1)/n*b, sends the same
//   all-to-all       receives (n-1)/n*b, sends the same
//   collective-permute  a device that is the target of a non-identity pair receives b; its
//                    source sends b; identity pairs move nothing
//   collective-broadcast receives b (non-roots), sends b (root)
// Local ops (slice, dynamic-slice, pad, select, ...) cost nothing.
#ifndef SPMDCHECK_ANALYSIS_COST_MODEL_H_
#define SPMDCHECK_ANALYSIS_COST_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ir/hlo_module.h"

namespace spmdcheck::analysis {

inline constexpr int64_t kAlphaBytes = 4096;

struct CollectiveCost {
  int64_t collectives = 0;
  int64_t collective_permutes = 0;
  // Over devices: the most any one device receives / sends.
  int64_t max_recv_bytes = 0;
  int64_t max_send_bytes = 0;

  // alpha * steps + max_recv_bytes: what the planner minimises.
  int64_t Score() const { return kAlphaBytes * collectives + max_recv_bytes; }
  // Sequential composition (maxima add up: an upper bound on the busiest device).
  CollectiveCost& operator+=(const CollectiveCost& other);
  std::string ToString() const;
};

// Cost of one collective instruction of a partitioned module (zero cost for anything else).
// `num_partitions` maps replica groups to devices.
CollectiveCost CostOfInstruction(const HloInstruction& instruction, int64_t num_partitions);

// Which domain (host, slice) each partition is in, and the factor a byte that crosses domains is
// charged instead of 1. Group collectives spread a device's traffic evenly over its peers.
struct DomainWeights {
  std::vector<int64_t> domain_of;  // Per partition id; ids beyond it are their own domain.
  int64_t cross_factor = 1;
};

// Per-device totals over every collective in the module (entry and called computations once
// each; loop bodies are counted once, not per trip).
struct ModuleCost {
  CollectiveCost total;  // collectives counted; max_* = max over devices of per-device sums.
  std::vector<int64_t> recv_bytes_per_device;
  std::vector<int64_t> send_bytes_per_device;
};
// With `weights`, bytes between partitions of different domains count cross_factor times.
ModuleCost CostOfModule(const HloModule& module, int64_t num_partitions,
                        const DomainWeights* weights = nullptr);

}  // namespace spmdcheck::analysis

#endif  // SPMDCHECK_ANALYSIS_COST_MODEL_H_
