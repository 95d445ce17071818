// `cmd:COMMAND`: any executable as the partitioner under test. The contract (docs/partitioners.md):
//   COMMAND IN.hlo OUT.hlo --num-partitions N
// exit 0: OUT.hlo holds the partitioned module; exit 2: the input was rejected; exit 3: it is
// unsupported; any other exit or a signal: a crash. stderr is kept for the report; the command
// is killed (with its process group) after the timeout.
#ifndef SPMDCHECK_TARGET_COMMAND_PARTITIONER_H_
#define SPMDCHECK_TARGET_COMMAND_PARTITIONER_H_

#include <string>

#include "target/partitioner_under_test.h"

namespace spmdcheck::target {

class CommandPartitioner : public PartitionerUnderTest {
 public:
  CommandPartitioner(std::string command, const TargetOptions& options)
      : command_(std::move(command)), timeout_seconds_(options.command_timeout_seconds) {}
  std::string spec() const override { return "cmd:" + command_; }
  // Nothing is known about the command but the contract.
  static PartitionerCapabilities Capabilities() { return {}; }
  PartitionerCapabilities capabilities() const override { return Capabilities(); }
  absl::StatusOr<PartitionOutput> Partition(const HloModule& global,
                                            int64_t num_partitions) override;

 private:
  std::string command_;
  double timeout_seconds_;
};

}  // namespace spmdcheck::target

#endif  // SPMDCHECK_TARGET_COMMAND_PARTITIONER_H_
