// The reference SPMD partitioner: turns a global module whose instructions carry shardings into
// the per-device program (XLA's conventions: local shapes, partition-id offsets, collectives with
// channel ids and global device ids), keeping on each instruction the global sharding of the
// value it holds.
#ifndef SPMDCHECK_PARTITIONER_PARTITIONER_H_
#define SPMDCHECK_PARTITIONER_PARTITIONER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "analysis/partition_stats.h"
#include "ir/hlo_module.h"

namespace spmdcheck::partitioner {

struct PartitionOptions {
  // 0: the module's num_partitions.
  int64_t num_partitions = 0;
  // Name of an injected bug (fuzz/bugs); empty = none. Only the fuzz campaign and `check
  // --inject-bug` set it.
  std::string inject_bug;
};

struct PartitionResult {
  std::unique_ptr<HloModule> module;
  analysis::PartitionStats stats;
  // Entry instruction name -> the global value it holds and its sharding, for every reshard
  // step's result (the oracle checks each, oracle::EquivOptions::claims).
  std::map<std::string, std::pair<std::string, HloSharding>> step_claims;
  // The same for the computations the entry calls (a while body's reshards, checked on every
  // trip): computation name -> instruction name -> held value (names repeat across computations).
  std::map<std::string, std::map<std::string, std::pair<std::string, HloSharding>>>
      called_step_claims;
};

// Partitions `global` (which must verify). Errors: InvalidArgument for inconsistent input
// (a sharding that does not fit its shape or device count), Unimplemented for constructs the
// partitioner cannot express at all.
absl::StatusOr<PartitionResult> PartitionModule(const HloModule& global,
                                                const PartitionOptions& options);

}  // namespace spmdcheck::partitioner

#endif  // SPMDCHECK_PARTITIONER_PARTITIONER_H_
